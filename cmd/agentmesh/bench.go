package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/embedded"
	"github.com/agentmesh/agentmesh/internal/benchsuite"
)

func init() {
	register(newBenchCmd)
	register(newBenchRoleCmd)
}

// newBenchCmd is the bench command: long for its help text, which lists
// every scenario and reads best in one place.
func newBenchCmd(a *app) *cobra.Command {
	var (
		only       []string
		rounds     int
		profileDir string
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run the benchmark suite, side by side with raw NATS baselines",
		Long: `bench measures the mesh against the plain way of doing the same thing on the
same server in the same run, and prints the ratio (mesh time over baseline
time; lower is better):

  task-round-trip       a no-op task through MESH_TASKS and back vs core request-reply
  direct-call           a no-op task to the agent's micro endpoint (mesh.call.<agent>)
                        vs core request-reply of the same event
  durable-hop           a structured task through TextAgent (MESH_TASKS, result on
                        mesh.result.TextAgent.<id>) vs the same hop written with
                        JetStream: a work-queue stream, a pull worker, a reply stream
  throughput            no-op tasks/s through 2 agent instances vs 2 hand-written
                        JetStream pull workers
  scale-sleep           tasks/s through 4 instances of an agent sleeping 10ms per task
                        vs 1 instance (THROUGHPUT RATIO is the scaling; target 3.5x)
  pipeline-chain100-outputs
                        a 100-step chain of an agent with an output, run by an
                        orchestrator, vs the same waves of tasks by hand (publish,
                        consume results, update a KV key)
  pipeline-wide10x100   10 chains of 100 no-op steps side by side, the same way
  objectstore-put-1MiB  resolver Store vs nats.go ObjectStore Put
  objectstore-get-1MiB  resolver Open vs nats.go ObjectStore Get
  task-no-steps         a no-op task with the step journal on vs the same agent with
                        it off (WithJournal(false)): a task taking no steps costs the same
  step-recorded         a task recording one step of 100 bytes vs the same task making
                        one raw KV put of 100 bytes (docs/durability.md)

Each side's parts run as processes of their own (this binary again), apart
from this one, which holds the server and sends the tasks: the agents in one
process, the baselines' responders and JetStream workers in another, the
pipelines' orchestrator in a third. So a ratio compares an agent process with
a hand-written worker process, never an agent with a worker in the caller.

The run-state scenarios run an orchestrator process and an agents process,
each next to the same tasks driven by hand through the same agent process
with one KV compare-and-set per result, and report time, KV writes and KV
bytes written per step (per turn for chat):

  wave-N                one wave of N parallel steps, each with an output
                        the orchestrator routes into the run's state
  chain-N               N such steps in sequence
  foreach-N             a for_each of N items, 8 at a time
  chat-N                N turns of one conversation, offline planner, one agent
                        call a turn: turns 1-10 vs 41-50 (vs 191-200)

N is 10, 100, 300 or 1000 (chat: 50 or 200). Without --only the sizes up to
100 run (chat-50); name the others: --only wave-1000,chat-200.

Each side runs --rounds times (default 3), alternating with the other, and each figure is the
median of its rounds. RATIO is the mesh's p50 over the baseline's (time per
operation where there is no p50; lower is better); THROUGHPUT RATIO is the
mesh's operations per second over the baseline's (higher is better).
Without --nats it starts an embedded server in a temporary directory. The
machine's other load shows in the figures: compare ratios, not absolutes.
A scenario that fails is reported with its error (FAILED, after the tables,
and on stderr) and the others still run; the exit status is then 1.
The same scenarios run with 'go test -bench Suite ./internal/benchsuite/',
which also compares the CloudEvents codec with sdk-go (scenario codec; the
agentmesh binary does not link sdk-go).
docs/benchmarks.md explains the figures.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if rounds < 1 {
				return usagef("--rounds %d: use 1 or more", rounds)
			}
			if a.natsURL == "" || !cmd.Flag("nats").Changed {
				dir, err := os.MkdirTemp("", "agentmesh-bench-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				srv, err := embedded.Start(embedded.Options{StoreDir: dir})
				if err != nil {
					return err
				}
				defer srv.Shutdown()
				a.natsURL = srv.URL()
			}
			m, err := a.connect(ctx, "agentmesh bench")
			if err != nil {
				return err
			}
			defer m.Close()
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("the run-state scenarios start this binary again: %w", err)
			}
			env := benchsuite.Env{NC: m.NC, JS: m.JS, Names: m.Names, Res: m.Res,
				Launch: func(role benchsuite.Role, names bus.Names) *exec.Cmd {
					// The child connects as this process did: the same
					// server and credentials (and the NATS_* variables
					// it inherits).
					args := []string{"bench-role", string(role), "--nats", m.NC.ConnectedUrl(), "--prefix", names.Prefix()}
					if a.creds != "" {
						args = append(args, "--creds", a.creds)
					}
					if a.tlsCA != "" {
						args = append(args, "--tls-ca", a.tlsCA)
					}
					if profileDir != "" {
						args = append(args, "--cpuprofile", filepath.Join(profileDir, string(role)+".pprof"))
					}
					return exec.Command(self, args...)
				}}
			pairs, closer, err := benchsuite.Pairs(ctx, env, only...)
			if err != nil {
				return err
			}
			defer closer.Close()
			var (
				results []benchsuite.Comparison
				failed  []string
			)
			for _, p := range pairs {
				if !a.jsonOut {
					fmt.Fprintf(a.errOut, "measuring %s ...\n", p.Name)
				}
				c := benchsuite.MeasureRounds(p, rounds)
				if c.Error != "" {
					failed = append(failed, c.ID)
					fmt.Fprintf(a.errOut, "agentmesh bench: %s\n", c.Error)
				}
				results = append(results, c)
			}
			if a.jsonOut {
				if err := a.printJSON(results); err != nil {
					return err
				}
			} else {
				benchsuite.Print(a.out, results)
			}
			if len(failed) > 0 {
				return fmt.Errorf("%d of %d scenarios failed (%s): the others' figures are above; their errors are on stderr", len(failed), len(results), strings.Join(failed, ", "))
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&rounds, "rounds", benchsuite.Rounds, "how many times each side runs, alternating; figures are the medians")
	cmd.Flags().StringVar(&profileDir, "cpuprofile-dir", "", "write a CPU profile of each process the scenarios start, for its whole life, into this directory (ROLE.pprof: orchestrator, agents, hop-agents, hop-baseline, pipeline-agents, pipeline-orchestrator; read with go tool pprof)")
	cmd.Flags().StringSliceVar(&only, "only", nil, "run only the scenarios of these exact names, e.g. --only durable-hop,throughput or --only wave-1000")
	return cmd
}

// newBenchRoleCmd is the hidden command bench starts its run-state
// scenarios' processes with: the agents, or an orchestrator replica.
func newBenchRoleCmd(a *app) *cobra.Command {
	var cpuprofile string
	cmd := &cobra.Command{
		Use:    "bench-role agents|orchestrator|hop-agents|hop-baseline|pipeline-agents|pipeline-orchestrator",
		Short:  "Play a process of the bench's scenarios (started by agentmesh bench)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			role, err := benchsuite.ParseRole(args[0])
			if err != nil {
				return err
			}
			if cpuprofile != "" {
				f, err := os.Create(cpuprofile)
				if err != nil {
					return fmt.Errorf("--cpuprofile: %w", err)
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return fmt.Errorf("--cpuprofile %s: %w", cpuprofile, err)
				}
				defer pprof.StopCPUProfile()
			}
			m, err := a.connect(cmd.Context(), "agentmesh bench-role "+args[0])
			if err != nil {
				return err
			}
			defer m.Close()
			return benchsuite.RunRole(cmd.Context(), m.NC, m.Names, role, func() { fmt.Fprintln(a.out, benchsuite.ReadyLine(role)) })
		},
	}
	cmd.Flags().StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of this process to this file until it ends")
	return cmd
}
