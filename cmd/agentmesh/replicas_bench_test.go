package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
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
// its first operation, from the process's /debug/pprof/profile, into
// replicas-<n>-<i>.pprof there.
const (
	replicaProfileEnv        = "AGENTMESH_BENCH_PROFILE_DIR"
	replicaProfileSecondsEnv = "AGENTMESH_BENCH_PROFILE_SECONDS"
)

// BenchmarkOrchestratorReplicas measures how the work of wide waves spreads
// over orchestrator replicas: 8 runs of a 1,000-step wave of an agent with
// one output, submitted at once, on 1 and on 2 `agentmesh orchestrator`
// processes (the agent runs in the benchmark's process, 64 tasks at a
// time). It reports steps/s. Run the two sizes alternately for ratios
// from one run, e.g.
//
//	for i in 1 2 3; do for n in 1 2; do
//	  go test ./cmd/agentmesh/ -run '^$' -bench "OrchestratorReplicas/replicas-$n\$" -benchtime 2x
//	done; done
func BenchmarkOrchestratorReplicas(b *testing.B) {
	bin := agentBinary(b)
	for _, replicas := range []int{1, 2} {
		b.Run(fmt.Sprintf("replicas-%d", replicas), func(b *testing.B) {
			emb, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: b.TempDir()})
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
			var addrs []string
			for range replicas {
				var args []string
				if dir != "" {
					addr := freeAddr(b)
					addrs = append(addrs, addr)
					args = []string{"--metrics-addr", addr, "--pprof"}
				}
				startOrchestrator(b, bin, emb.URL(), args...)
			}
			profiled := dir == ""
			var took float64
			for b.Loop() {
				var wg sync.WaitGroup
				if !profiled {
					profiled = true
					for i, addr := range addrs {
						wg.Go(func() {
							fetchProfile(b, addr, filepath.Join(dir, fmt.Sprintf("replicas-%d-%d.pprof", replicas, i+1)))
						})
					}
				}
				took += runShapes(b, nc, js, names, "MemEmit", replicaBenchWidth, 1, replicaBenchRuns).Seconds()
				wg.Wait()
			}
			b.ReportMetric(float64(b.N*replicaBenchRuns*replicaBenchWidth)/took, "steps/s")
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
