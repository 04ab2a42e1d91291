package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRunFromForksAtAStep: run --from RUN --at STEP runs STEP again with
// the changed param and keeps the step before it (no task), says so, and
// runs lists the fork with its origin; a fork asked wrongly is a usage
// error, and one the orchestrator refuses exits 1 with its reason.
func TestRunFromForksAtAStep(t *testing.T) {
	url := pipelineMesh(t)
	var out, errOut bytes.Buffer
	if code := run([]string{"--nats", url, "run", pipelineFile(t, "shout.yaml", shoutPipeline), "--run-id", "first"}, &out, &errOut); code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, &out, &errOut)
	}
	out.Reset()
	if code := run([]string{"--nats", url, "run", "--from", "first", "--at", "count", "--param", "count.op=reverse", "--run-id", "again"}, &out, &errOut); code != 0 {
		t.Fatalf("run --from: exit %d\n%s%s", code, &out, &errOut)
	}
	for _, want := range []string{
		"run again: forked from run first at step count",
		"wave 1  upper        TextAgent            completed (kept from run first, no task)",
		"wave 2  count        TextAgent            completed",
		`"ILC EHT MORF OLLEH"`,
		"run again completed: 2 completed, 0 failed, 0 skipped",
		"forked from run first at step count",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("run --from output misses %q:\n%s", want, &out)
		}
	}
	out.Reset()
	if code := run([]string{"--nats", url, "runs"}, &out, &errOut); code != 0 {
		t.Fatalf("runs: exit %d: %s", code, &errOut)
	}
	lines := strings.Split(out.String(), "\n")
	if !strings.HasSuffix(strings.TrimSpace(lines[0]), "FROM") || !strings.HasPrefix(lines[1], "again") || !strings.HasSuffix(strings.TrimSpace(lines[1]), "first@count") {
		t.Errorf("runs does not show the fork's origin:\n%s", &out)
	}

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "--from", "first"}, exitUsage, "give --at STEP"},
		{[]string{"run", "--at", "count", pipelineFile(t, "shout.yaml", shoutPipeline)}, exitUsage, "give --from RUN too"},
		{[]string{"run", "--from", "first", "--at", "count", "x.yaml"}, exitUsage, "takes no FILE"},
		{[]string{"run", "--from", "first", "--at", "count", "--param", "op=reverse"}, exitUsage, `param "op": write <step>.<param>`},
		{[]string{"run", "--from", "first", "--at", "count", "--param", "upper.op=lower"}, exitFailure, `step "upper" does not depend on "count"`},
		{[]string{"run", "--from", "nope", "--at", "count"}, exitFailure, `no run "nope"`},
	} {
		out.Reset()
		errOut.Reset()
		code := run(append([]string{"--nats", url}, c.args...), &out, &errOut)
		if code != c.code || !strings.Contains(out.String()+errOut.String(), c.want) {
			t.Errorf("%v: exit %d, want %d with %q\n%s%s", c.args, code, c.code, c.want, &out, &errOut)
		}
	}
}
