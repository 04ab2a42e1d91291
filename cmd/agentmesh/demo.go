package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

func init() { register(newDemoCmd) }

// demoMessage is the seed scenario the demo runs.
const demoMessage = "Find sunset images and organize them into folders"

func newDemoCmd(a *app) *cobra.Command {
	var (
		store   string
		keep    bool
		stay    bool
		message string
		timeout time.Duration
		addr    string
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "See the mesh work: start it, store sample files, run the seed scenario, print the folders",
		Long: `demo starts the mesh like 'up' (embedded NATS with JetStream in a temporary
directory, the orchestrator and every built-in agent as separate processes),
stores generated sample images (sunsets, forests, seascapes, night cities, snow)
and a few documents, asks "` + demoMessage + `"
through the chat path, shows the progress, prints the folders with their files,
stops everything and exits 0. With --stay the mesh and the dashboard stay up
after the report, with the sample files and the demo's run in them, until
Ctrl-C.

An LLM plans the work when OPENAI_API_KEY or OPENAI_BASE_URL is set (or
AGENTMESH_MODEL=anthropic:MODEL with ANTHROPIC_API_KEY, gemini:MODEL with
GEMINI_API_KEY); otherwise the offline planner does, and says so.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if !cmd.Flag("nats").Changed {
				a.natsURL = "" // NATS_URL from the environment does not redirect the demo
			}
			if store == "" {
				dir, err := os.MkdirTemp("", "agentmesh-demo-")
				if err != nil {
					return err
				}
				if !keep {
					defer os.RemoveAll(dir)
				}
				store = dir
			}
			return a.runDemo(ctx, demoRun{store: store, message: message, timeout: timeout, addr: addr, explicit: cmd.Flag("http").Changed, stay: stay})
		},
	}
	f := cmd.Flags()
	f.StringVar(&store, "store", "", "JetStream data directory (default: a temporary one, removed afterwards)")
	f.BoolVar(&keep, "keep", false, "keep the temporary store directory")
	f.BoolVar(&stay, "stay", false, "after the report, keep the mesh and the dashboard up until Ctrl-C, to look around")
	f.StringVar(&message, "message", demoMessage, "what to ask the mesh")
	f.DurationVar(&timeout, "timeout", 3*time.Minute, "give up after this long")
	f.StringVar(&addr, "http", defaultHTTP, "serve the dashboard and HTTP API here while the demo runs (HOST:PORT; \"\" for none)")
	return cmd
}

// demoRun is what demo was asked to do.
type demoRun struct {
	store, message, addr string
	timeout              time.Duration
	explicit             bool // --http was given
	stay                 bool // keep the mesh up after the report until Ctrl-C
}

// runDemo starts the whole mesh in this process, sends the demo's chat turn
// and prints what happened. It is long because it is the demo's script, one
// step after another, and reads best top to bottom.
func (a *app) runDemo(parent context.Context, d demoRun) error {
	store, message, addr := d.store, d.message, d.addr
	ctx, cancel := context.WithTimeout(parent, d.timeout)
	defer cancel()
	say := func(format string, args ...any) { fmt.Fprintf(a.out, format+"\n", args...) }

	say("== starting the mesh (store %s)", store)
	logs := &bytes.Buffer{}
	st, err := a.startStack(ctx, stackOptions{store: store, host: "127.0.0.1", port: 0}, &lockedWriter{w: logs})
	if err != nil {
		return fmt.Errorf("%w\n%s", err, logs.String())
	}
	defer func() { _ = st.stop() }()
	a.printStatus(a.out, st)
	dash, err := a.startDashboard(parent, addr, d.explicit, "")
	if err != nil {
		return err
	}
	defer dash.stop()

	m, err := a.connect(ctx, "agentmesh demo")
	if err != nil {
		return err
	}
	defer m.Close()
	files := resolvers.NewObjectStore(m.Res.Files)

	say("\n== storing sample files")
	set, err := storeSamples(ctx, m.Res.Files)
	if err != nil {
		return err
	}
	names := set.names
	say("stored %s", set)

	say("\n== asking the mesh: %q", message)
	resp, err := a.chatTurn(ctx, m, "", message, a.out)
	if err != nil {
		return err
	}
	say("\n== answer (%s planner, %s, %d ms)", orDefault(resp.Planner, "llm"), schemas.Plural(resp.Steps, "step", "steps"), resp.DurationMS)
	say("%s", resp.Output)
	for _, tc := range resp.ToolCalls {
		status := "ok"
		if !tc.Success {
			status = "failed: " + tc.Error
		}
		say("  %-20s %6d ms  %s  %s", tc.Agent, tc.DurationMS, status, tc.Summary)
	}
	if resp.State != schemas.ChatCompleted {
		return fmt.Errorf("the turn ended %s: %s", resp.State, orDefault(resp.Error, resp.Output))
	}

	say("\n== folders")
	folders := map[string][]string{}
	for ref, err := range files.List(ctx) {
		if err != nil {
			return err
		}
		if f := ref.Metadata[resolvers.MetaFolder]; f != "" {
			folders[f] = append(folders[f], names[ref.ID]+" ("+ref.ID+")")
		}
	}
	if len(folders) == 0 {
		return fmt.Errorf("no file was put into a folder; see the answer above")
	}
	keys := make([]string, 0, len(folders))
	for k := range folders {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		sort.Strings(folders[k])
		say("%s/ (%s)", k, schemas.Plural(len(folders[k]), "file", "files"))
		for _, f := range folders[k] {
			say("  %s", f)
		}
	}
	if d.stay {
		say("\n== the mesh stays up on %s (the dashboard too, if it started above); try in another terminal:\n  NATS_URL=%s agentmesh files ls\n  NATS_URL=%s agentmesh chat %q\nCtrl-C stops it.", st.url, st.url, st.url, demoMessage)
		<-parent.Done()
	}
	say("\n== stopping the mesh")
	dash.stop()
	if err := st.stop(); err != nil {
		return fmt.Errorf("%w\n%s", err, logs.String())
	}
	say("done")
	return nil
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}
