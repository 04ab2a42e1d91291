package main

import (
	"bytes"
	"context"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/samples"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/resolvers"
)

// TestExamplePipelineWithBuiltinAgents runs the README's pipeline file with
// `agentmesh run` against the real built-in agents on generated samples, and
// checks that exactly the sunset images ended up in the sunset folder.
func TestExamplePipelineWithBuiltinAgents(t *testing.T) {
	const file = "../../examples/pipelines/sunsets.yaml"
	yaml, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(readme, []byte("```yaml\n"+string(yaml)+"```")) {
		t.Fatal("README.md's pipeline differs from examples/pipelines/sunsets.yaml")
	}

	mt := meshtest.New(t)
	srv, res, nc := mt.Srv, mt.Res, mt.NC
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	m := &mesh{NC: nc, JS: js, Names: srv.Names(), Res: res}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, name := range []string{"ImageSearchAgent", "AnalysisAgent", "FolderAgent"} {
		a, err := builtins[name].build(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		mt.Run(t, a, agents.WithValueResolver(resolvers.NewCollections(res.Files, 0)))
	}
	mt.Orchestrator(t, nil)

	store := resolvers.NewObjectStore(res.Files)
	scene := map[string]string{}
	for _, s := range samples.Images() {
		ref, err := store.Store(ctx, bytes.NewReader(s.Content), s.MediaType, s.Metadata())
		if err != nil {
			t.Fatal(err)
		}
		scene[ref.ID] = s.Scene
	}

	var out, errOut bytes.Buffer
	if code := run([]string{"--nats", srv.URL(), "run", file}, &out, &errOut); code != 0 {
		t.Fatalf("agentmesh run exited %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	for _, step := range []string{"search", "analyze", "organize"} {
		if !strings.Contains(out.String()+errOut.String(), step) {
			t.Errorf("no progress line for step %s:\n%s%s", step, out.String(), errOut.String())
		}
	}
	var inSunset, wantSunset []string
	for ref, err := range store.List(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if ref.Metadata[resolvers.MetaFolder] == "sunset" {
			inSunset = append(inSunset, ref.ID)
		}
		if scene[ref.ID] == samples.SceneSunset {
			wantSunset = append(wantSunset, ref.ID)
		}
	}
	sort.Strings(inSunset)
	sort.Strings(wantSunset)
	if len(wantSunset) == 0 || strings.Join(inSunset, ",") != strings.Join(wantSunset, ",") {
		t.Fatalf("sunset folder holds %v, want the sunset samples %v", inSunset, wantSunset)
	}
}
