package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/embedded"
	"github.com/agentmesh/agentmesh/internal/proctest"
)

// Wide waves run side by side by BenchmarkOrchestratorReplicas: this many
// runs of this many parallel steps, submitted at once, make one operation.
const (
	replicaBenchRuns  = 8
	replicaBenchWidth = 1000
)

// replicaProfileEnv names a directory: with it set,
// BenchmarkOrchestratorReplicas takes a CPU profile of each orchestrator
// process over the first replicaProfileSecondsEnv seconds (default 10) of
// its operations, from the process's /debug/pprof/profile, into
// replicas-<n>-<i>.pprof there (give -benchtime enough operations to fill
// those seconds).
const (
	replicaProfileEnv        = "AGENTMESH_BENCH_PROFILE_DIR"
	replicaProfileSecondsEnv = "AGENTMESH_BENCH_PROFILE_SECONDS"
)

// BenchmarkOrchestratorReplicas measures how the work of wide waves spreads
// over orchestrator replicas: 8 runs of a 1,000-step wave of an agent with
// one output, submitted at once, on 1 and on 2 `agentmesh orchestrator`
// processes (the agent runs in the benchmark's process, 64 tasks at a
// time). It reports steps/s, how many replicas exited (crashed) while it
// ran (the figures are then not those of the replicas asked for), and the
// CPU time a step costs in the orchestrator processes and in the
// benchmark's own (the NATS server, the agent, the client): on a machine
// of few cores their sum bounds steps/s.
// Run the two sizes alternately for ratios from one run, e.g.
//
//	for i in 1 2 3; do for n in 1 2; do
//	  go test ./cmd/agentmesh/ -run '^$' -bench "OrchestratorReplicas/replicas-$n\$" -benchtime 2x
//	done; done
func BenchmarkOrchestratorReplicas(b *testing.B) {
	bin := agentBinary(b)
	for _, replicas := range []int{1, 2} {
		b.Run(fmt.Sprintf("replicas-%d", replicas), func(b *testing.B) {
			emb, err := embedded.Start(embedded.Options{StoreDir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(emb.Shutdown)
			nc, err := nats.Connect(emb.URL())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(nc.Close)
			js, err := jetstream.New(nc)
			if err != nil {
				b.Fatal(err)
			}
			names := bus.MustNames(bus.DefaultPrefix)
			if _, err := bus.Provision(context.Background(), js, names, bus.ProvisionOptions{}); err != nil {
				b.Fatal(err)
			}
			serveAgent(b, emb.URL(), "MemEmit", true)
			dir := os.Getenv(replicaProfileEnv)
			var (
				addrs []string
				procs []*proctest.Proc
				pids  []int
			)
			for range replicas {
				var args []string
				if dir != "" {
					addr := freeAddr(b)
					addrs = append(addrs, addr)
					args = []string{"--metrics-addr", addr, "--pprof"}
				}
				p := startOrchestratorProc(b, bin, emb.URL(), args...)
				procs, pids = append(procs, p), append(pids, p.Cmd.Process.Pid)
			}
			var (
				took   float64
				wg     sync.WaitGroup
				orchAt = procsCPU(pids)
				selfAt = selfCPU()
			)
			for b.Loop() {
				if len(addrs) > 0 {
					for i, addr := range addrs {
						wg.Go(func() {
							fetchProfile(b, addr, filepath.Join(dir, fmt.Sprintf("replicas-%d-%d.pprof", replicas, i+1)))
						})
					}
					addrs = nil
				}
				took += runShapes(b, nc, js, names, "MemEmit", replicaBenchWidth, 1, replicaBenchRuns).Seconds()
			}
			orch, self := procsCPU(pids)-orchAt, selfCPU()-selfAt
			wg.Wait()
			// A replica that died fails the benchmark: the other one
			// finishes the runs, but nothing should kill a replica.
			exited := 0
			for i, p := range procs {
				select {
				case <-p.Exited():
					exited++
					b.Errorf("orchestrator replica %d of %d exited during the benchmark (%v); the figures are not those of %d replicas; its stderr:\n%s",
						i+1, replicas, p.Err(), replicas, p.Stderr)
				default:
				}
			}
			b.ReportMetric(float64(exited), "replicas-exited")
			steps := float64(b.N * replicaBenchRuns * replicaBenchWidth)
			b.ReportMetric(steps/took, "steps/s")
			// Where the CPU went, per step: the orchestrator processes, and
			// this process (the NATS server, the agent and the client).
			if orch > 0 {
				b.ReportMetric(float64(orch.Microseconds())/steps, "orchestrator-cpu-µs/step")
			}
			if self > 0 {
				b.ReportMetric(float64(self.Microseconds())/steps, "server+agent-cpu-µs/step")
			}
		})
	}
}

// fetchProfile writes the CPU profile of the process serving pprof on addr,
// over the next replicaProfileSecondsEnv seconds (default 10), to file.
func fetchProfile(t testing.TB, addr, file string) {
	seconds := 10
	if s := os.Getenv(replicaProfileSecondsEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Errorf("%s=%q: give a whole number of seconds, 1 or more", replicaProfileSecondsEnv, s)
			return
		}
		seconds = n
	}
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, seconds))
	if err != nil {
		t.Errorf("profile of %s: %v", addr, err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("profile of %s: %s", addr, resp.Status)
		return
	}
	f, err := os.Create(file)
	if err != nil {
		t.Error(err)
		return
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		t.Errorf("profile of %s: %v", addr, err)
	}
	if err := f.Close(); err != nil {
		t.Error(err)
	}
}

// procsCPU is the CPU time (user and system) processes pids used so far,
// from /proc (0 where there is none).
func procsCPU(pids []int) time.Duration {
	var total time.Duration
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0
		}
		// The fields after the command's closing parenthesis; utime and
		// stime are the 14th and 15th of the line, in clock ticks (100 a
		// second on Linux).
		rest := string(b)
		if i := strings.LastIndexByte(rest, ')'); i >= 0 {
			rest = rest[i+1:]
		}
		f := strings.Fields(rest)
		if len(f) < 13 {
			return 0
		}
		for _, v := range f[11:13] {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0
			}
			total += time.Duration(n) * 10 * time.Millisecond
		}
	}
	return total
}
