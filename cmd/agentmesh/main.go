// Command agentmesh is the one binary of the mesh: the embedded server, the
// orchestrator, the built-in agents, and the client commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// commands holds the constructors of the sub-commands; each command's file
// adds its own in an init function, so commands stay in their own files.
var commands []func(*app) *cobra.Command

func register(c func(*app) *cobra.Command) { commands = append(commands, c) }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the CLI and returns the exit status: 0, exitFailure, or
// exitUsage for a command called wrongly. Errors become one clear line on
// stderr.
func run(args []string, stdout, stderr io.Writer) int {
	a := &app{out: stdout, errOut: stderr}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer a.obs.stop()
	if err := root.ExecuteContext(ctx); err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			if ee.msg != "" {
				fmt.Fprintln(stderr, "agentmesh:", ee.msg)
			}
			return ee.code
		}
		fmt.Fprintln(stderr, "agentmesh:", err)
		if isUsage(err) {
			return exitUsage
		}
		return exitFailure
	}
	return 0
}

// exitError ends the program with a given status; msg may be empty when the
// command already explained itself.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "agentmesh",
		Short: "An event-driven agent mesh over NATS",
		Long: `agentmesh runs agents as independent processes that announce typed contracts
and take tasks from NATS. An orchestrator turns chat messages and pipelines into
tasks, keeps state in JetStream KV, and routes outputs by data type.

Start everything locally with 'agentmesh up', or see it work with 'agentmesh demo'.
Every client command talks to the NATS server named by --nats (or NATS_URL).
Each command's --help lists the flags it takes. Exit status: 0 done, 1 failed,
2 called wrongly (unknown command or flag, bad argument or flag value);
'watch' and 'run' exit 3 when their run was cancelled. -v is --verbose
wherever a command has it; the version is --version or 'agentmesh version'.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	root.SetVersionTemplate("agentmesh {{.Version}}\n")
	// --version without -v, which is --verbose wherever a command has it.
	root.Flags().Bool("version", false, "print the version of this binary (also 'agentmesh version')")
	f := root.PersistentFlags()
	f.StringVar(&a.natsURL, "nats", envOr("NATS_URL", ""), "NATS server URL (env NATS_URL; without either, nats://127.0.0.1:4222)")
	f.StringVar(&a.creds, "creds", os.Getenv("NATS_CREDS"), "NATS credentials file, e.g. from 'agentmesh creds' (env NATS_CREDS)")
	f.StringVar(&a.tlsCA, "tls-ca", os.Getenv("NATS_CA"), "CA certificate to trust for the server's TLS, e.g. STORE/secure/ca.pem of 'agentmesh server --secure' (env NATS_CA)")
	f.StringVar(&a.prefix, "prefix", envOr("AGENTMESH_PREFIX", "mesh"), "subject prefix of the mesh (env AGENTMESH_PREFIX)")
	f.BoolVar(&a.jsonOut, "json", false, "machine-readable JSON output")
	a.settings.register(f)
	a.obs.register(f)
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if err := checkFlags(cmd); err != nil {
			return err
		}
		if err := a.settings.check(); err != nil {
			return err
		}
		return a.obs.start(cmd)
	}
	for _, c := range commands {
		root.AddCommand(c(a))
	}
	conventions(root)
	return root
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
