package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/pipelinespec"
)

// A submission naming a run id another submission took first fails with
// ErrRunExists, naming the run and what to do; the stream keeps one.
func TestSubmitTakenRunIDFails(t *testing.T) {
	srv := bustest.Start(t)
	res := srv.Provision(t)
	names := srv.Names()
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	spec := pipelinespec.PipelineSpec{Name: "p", Steps: []pipelinespec.PipelineStep{{ID: "a", Agent: "A"}}}
	if _, err := client.SubmitPipeline(ctx, js, names, spec, "r-1", "test"); err != nil {
		t.Fatalf("first submission: %v", err)
	}
	_, err := client.SubmitPipeline(ctx, js, names, spec, "r-1", "other")
	if !errors.Is(err, client.ErrRunExists) || !errors.Is(err, bus.ErrDuplicate) {
		t.Fatalf("second submission of r-1: %v, want ErrRunExists", err)
	}
	for _, want := range []string{`"r-1"`, "another run id"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %s", err, want)
		}
	}
	info, err := res.Requests.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Errorf("%s holds %d submissions, want 1", names.RequestsStream(), info.State.Msgs)
	}
	if _, err := client.SubmitPipeline(ctx, js, names, spec, "", "test"); err != nil {
		t.Errorf("a submission without a run id: %v", err)
	}
}
