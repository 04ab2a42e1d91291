package imagesearch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents/builtin/imagesearch"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/benchsuite"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// searchTask is the benchmark's task: a query and a limit, no scope.
var searchTask = []byte(`{"params":{"query":"sunset","limit":5},"timeout_ms":30000}`)

// fill puts n tiny images into files, their visual words already cached
// so that no task decodes them, 16 at a time.
func fill(b *testing.B, files jetstream.ObjectStore, n int) {
	store := resolvers.NewObjectStore(files)
	var wg sync.WaitGroup
	next := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				meta := map[string]string{"filename": fmt.Sprintf("img-%05d.png", i), imagesearch.MetaVisualVersion: imagesearch.VisualVersion,
					imagesearch.MetaVisual: []string{"sunset warm", "sea blue", "forest green", "night dark"}[i%4]}
				if _, err := store.Store(context.Background(), bytes.NewReader([]byte{byte(i)}), "image/png", meta); err != nil {
					b.Error(err)
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// answered is the baseline worker's work: it reads the task and answers
// success, as a hand-written worker with nothing to search would.
func answered(task []byte) ([]byte, error) {
	var t map[string]json.RawMessage
	if err := json.Unmarshal(task, &t); err != nil {
		return nil, err
	}
	return []byte(`{"success":true}`), nil
}

// BenchmarkSearch measures ImageSearchAgent on an empty store and on one of
// 10,000 tiny images: Execute over a store that is listed per task
// (listing) and over the watched index (indexed), and the durable hop
// through the agent on the index next to the hand-written JetStream hop
// (both report p50-ns; issue 16's target is 1.2x).
func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{0, 10_000} {
		b.Run(fmt.Sprintf("files-%d", n), func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			srv := bustest.Start(b)
			env := benchsuite.Env{NC: srv.Conn(b), JS: srv.JetStream(b), Names: srv.Names(), Res: srv.Provision(b)}
			fill(b, env.Res.Files, n)
			indexed := resolvers.NewObjectStore(env.Res.Files)
			if err := indexed.Index(ctx); err != nil {
				b.Fatal(err)
			}
			for _, s := range []struct {
				name  string
				store *resolvers.ObjectStore
			}{{"execute-listing", resolvers.NewObjectStore(env.Res.Files)}, {"execute-indexed", indexed}} {
				b.Run(s.name, func(b *testing.B) {
					a, err := imagesearch.New(s.store)
					if err != nil {
						b.Fatal(err)
					}
					ec := schemas.NewExecutionContext(nil)
					ec.SetParams(map[string]any{"query": "sunset", "limit": 5})
					for b.Loop() {
						if res, err := a.Execute(ctx, ec); err != nil || !res.Success {
							b.Fatalf("%+v, %v", res, err)
						}
					}
				})
			}
			a, err := imagesearch.New(indexed)
			if err != nil {
				b.Fatal(err)
			}
			pair, closer, err := benchsuite.AgentHop(ctx, env, benchsuite.Hop{
				ID: "imagesearch-hop", Name: "durable hop (ImageSearchAgent)", Agent: a, Task: searchTask, Work: answered, Want: "success",
			})
			if err != nil {
				b.Fatal(err)
			}
			defer closer.Close()
			b.Run("hop/baseline", pair.Baseline)
			b.Run("hop/agentmesh", pair.Mesh)
		})
	}
}
