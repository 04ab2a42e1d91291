package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit statuses of the CLI: 0 success, exitFailure when the command ran and
// failed, exitUsage when it was called wrongly (an unknown command or flag, a
// missing or extra argument, a bad flag value), exitCancelled when watch or
// run saw their run cancelled.
const (
	exitFailure   = 1
	exitUsage     = 2
	exitCancelled = 3
)

// usageError is a command called wrongly; it exits with exitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef makes a usage error.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// isUsage reports whether err is a usage error: ours, or cobra's "unknown
// command", which it returns as plain text.
func isUsage(err error) bool {
	var ue usageError
	return errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command ")
}

// Groups of the root's flags. Every command takes only the groups it uses;
// its help lists only those, and a flag of another group is a usage error.
type flagGroup int

const (
	groupNATS     flagGroup = 1 << iota // --nats, --creds, --tls-ca, --connect-wait
	groupPrefix                         // --prefix
	groupSettings                       // --js-replicas and the retention flags, shown in help
	groupLog                            // --log-format, --log-level
	groupJSON                           // --json: the command has a JSON output
)

// groupClient is the groups of a command that connects to a mesh.
const groupClient = groupNATS | groupPrefix

// flagGroups says which root flags each command takes, by its path without
// "agentmesh ". A command that connects provisions the mesh, so it takes
// the settings flags even where its help folds them into one line (only
// commands that run the mesh list them: groupSettings).
var flagGroups = map[string]flagGroup{
	"a2a":                   groupClient | groupLog,
	"agent":                 groupClient | groupSettings | groupLog,
	"agents":                groupClient | groupJSON,
	"approve":               groupClient | groupJSON,
	"bench":                 groupClient | groupJSON | groupLog,
	"bench-role":            groupClient | groupLog,
	"chat":                  groupClient | groupJSON | groupLog,
	"conversations":         groupClient | groupJSON,
	"creds":                 groupClient, // makes a client's files bucket on the running mesh
	"creds revoke":          groupClient | groupJSON,
	"demo":                  groupClient | groupLog,
	"eval":                  groupClient | groupJSON,
	"files":                 0,
	"files put":             groupClient | groupJSON,
	"files ls":              groupClient | groupJSON,
	"files get":             groupClient,
	"files rm":              groupClient | groupJSON,
	"files samples":         groupClient,
	"files info":            groupClient | groupJSON,
	"gateway":               groupClient | groupLog,
	"input":                 groupClient, // its own --json says VALUE is JSON
	"kb":                    0,
	"kb create":             groupClient | groupJSON,
	"kb add":                groupClient | groupJSON,
	"kb ls":                 groupClient | groupJSON,
	"kb search":             groupClient | groupJSON,
	"kb rm":                 groupClient | groupJSON,
	"memory":                0,
	"memory ls":             groupClient | groupJSON,
	"memory rm":             groupClient | groupJSON,
	"mcp":                   groupClient | groupLog,
	"orchestrator":          groupClient | groupSettings | groupLog,
	"run":                   groupClient | groupJSON,
	"rollout":               groupClient | groupJSON,
	"rollout status":        groupClient | groupJSON,
	"rollout rm":            groupClient | groupJSON,
	"runs":                  groupClient | groupJSON,
	"schedule":              0,
	"schedule add":          groupClient | groupJSON,
	"schedule ls":           groupClient | groupJSON,
	"schedule rm":           groupClient | groupJSON,
	"server":                groupPrefix | groupSettings | groupLog,
	"state":                 0,
	"state show":            groupClient | groupJSON,
	"task":                  groupClient | groupJSON,
	"up":                    groupClient | groupSettings | groupLog,
	"version":               groupJSON,
	"watch":                 groupClient | groupJSON,
	"":                      0, // the root itself
	"help":                  0,
	"completion":            0,
	"completion bash":       0,
	"completion fish":       0,
	"completion zsh":        0,
	"completion powershell": 0,
}

// waitsForServer are the commands whose --connect-wait defaults to
// serverWait (waitForServer).
var waitsForServer = map[string]bool{"a2a": true, "agent": true, "orchestrator": true}

// rootFlagGroup is the group of each of the root's flags.
var rootFlagGroup = map[string]flagGroup{
	"nats": groupNATS, "creds": groupNATS, "tls-ca": groupNATS, "connect-wait": groupNATS,
	"prefix":     groupPrefix,
	"json":       groupJSON,
	"log-format": groupLog, "log-level": groupLog,
	"js-replicas": groupSettings, "task-max-age": groupSettings, "runs-ttl": groupSettings,
	"conversations-ttl": groupSettings, "requests-max-age": groupSettings, "dead-max-age": groupSettings,
	"files-max-age": groupSettings, "stream-max-bytes": groupSettings, "bucket-max-bytes": groupSettings,
	"files-max-bytes": groupSettings, "steps-ttl": groupSettings,
}

func commandPath(cmd *cobra.Command) string {
	return strings.TrimPrefix(strings.TrimPrefix(cmd.CommandPath(), "agentmesh"), " ")
}

// groupsOf returns the flag groups of cmd; a command missing from the table
// takes none (TestEveryCommandHasFlagGroups keeps the table whole).
func groupsOf(cmd *cobra.Command) flagGroup { return flagGroups[commandPath(cmd)] }

// takes reports whether cmd takes the root flag name: its group is the
// command's, or it is a settings flag of a command that connects.
func takes(cmd *cobra.Command, name string) bool {
	g := groupsOf(cmd)
	fg := rootFlagGroup[name]
	return g&fg != 0 || (fg == groupSettings && g&groupNATS != 0)
}

// checkFlags refuses a root flag given to a command that does not take it.
func checkFlags(cmd *cobra.Command) error {
	var err error
	cmd.Root().PersistentFlags().VisitAll(func(f *pflag.Flag) {
		if err != nil || !f.Changed || cmd.LocalNonPersistentFlags().Lookup(f.Name) != nil {
			return
		}
		if _, ours := rootFlagGroup[f.Name]; ours && !takes(cmd, f.Name) {
			path := commandPath(cmd)
			if f.Name == "json" {
				err = usagef("--json: 'agentmesh %s' has no JSON output; see 'agentmesh %s --help' for its flags", path, path)
				return
			}
			err = usagef("--%s does not apply to 'agentmesh %s'; see 'agentmesh %s --help' for its flags", f.Name, path, path)
		}
	})
	return err
}

// showOnly hides the root flags cmd does not list in its help, and gives
// --connect-wait the command's own default.
func showOnly(cmd *cobra.Command) {
	g := groupsOf(cmd)
	cmd.Root().PersistentFlags().VisitAll(func(f *pflag.Flag) {
		fg, ours := rootFlagGroup[f.Name]
		if ours {
			f.Hidden = g&fg == 0
		}
	})
	if f := cmd.Root().PersistentFlags().Lookup("connect-wait"); f != nil && waitsForServer[commandPath(cmd)] {
		f.DefValue = serverWait.String()
	}
}

// foldedSettings is the line that stands for the settings flags in the help
// of a command that takes them without listing them.
const foldedSettings = `
Mesh settings: --js-replicas and the retention and size flags that
'agentmesh up --help' lists are taken too; given, they change the mesh's
streams and buckets.
`

// conventions applies the CLI's conventions to the command tree under root:
// usage errors for bad flags, arguments and unknown commands, help that
// lists only the flags a command takes, and a refusal of the others.
func conventions(root *cobra.Command) {
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	defaultHelp := root.HelpFunc()
	root.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		showOnly(cmd)
		defaultHelp(cmd, args)
		if g := groupsOf(cmd); g&groupNATS != 0 && g&groupSettings == 0 {
			_, _ = io.WriteString(cmd.OutOrStdout(), foldedSettings)
		}
	})
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		switch {
		case !c.Runnable() && c.HasSubCommands():
			// A group such as files: bare, it shows its help; with an
			// unknown sub-command, it says so (cobra would show help and
			// exit 0).
			c.Args = cobra.ArbitraryArgs
			c.RunE = func(cmd *cobra.Command, args []string) error {
				if len(args) == 0 {
					return cmd.Help()
				}
				msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
				if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
					msg += "; did you mean " + strings.Join(s, " or ") + "?"
				}
				return usagef("%s; see '%s --help'", msg, cmd.CommandPath())
			}
		case c.Args != nil:
			args := c.Args
			c.Args = func(cmd *cobra.Command, a []string) error {
				if err := args(cmd, a); err != nil {
					return usagef("%v; usage: %s", err, cmd.UseLine())
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
