package gateway

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/schemas"
)

var hookSecret = []byte("0123456789abcdef-hook-secret")

const hookPipeline = `name: shout
seed:
  values:
    body: {data_type: TEXT, value: "placeholder"}
steps:
  - {id: upper, agent: TextAgent, params: {op: upper}, inputs: {text: seed.body}}
`

func newHookMesh(t *testing.T) *testMesh {
	spec, err := client.ParsePipeline([]byte(hookPipeline), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	return newTestMesh(t, WithHook("deploy", Hook{Spec: spec, Secret: hookSecret}))
}

// TestHookRunsTheSignedBody: a delivery signed with the hook's secret (and
// a timestamp) starts the hook's pipeline with the body as seed.body; the
// same delivery again starts nothing more and answers the same run.
func TestHookRunsTheSignedBody(t *testing.T) {
	m := newHookMesh(t)
	body := []byte(`hello from the hook`)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	sig := SignHook(hookSecret, body, ts)
	r := m.do(t, "POST", "/api/hooks/deploy", "text/plain", body, HookSignatureHeader, sig, HookTimestampHeader, ts)
	var acc HookAccepted
	decode(t, r, &acc)
	if r.status != 202 || !strings.HasPrefix(acc.RunID, "hook-deploy-") || acc.Duplicate {
		t.Fatalf("hook: %d %s", r.status, clip(r.body))
	}
	events := m.openSSE(t, "/api/runs/"+acc.RunID+"/events")
	end := waitEvent(t, events, "io.agentmesh.pipeline.completed", nil)
	if dataOf(end)["status"] != "completed" {
		t.Fatalf("the hook's run: %v", end.Data)
	}
	r = m.getJSON(t, "/api/runs/"+acc.RunID)
	if r.status != 200 || !bytes.Contains(r.body, []byte("HELLO FROM THE HOOK")) {
		t.Fatalf("the run does not hold the body's text in upper case: %s", clip(r.body))
	}

	r = m.do(t, "POST", "/api/hooks/deploy", "text/plain", body, HookSignatureHeader, sig, HookTimestampHeader, ts)
	var again HookAccepted
	decode(t, r, &again)
	if r.status != 200 || again.RunID != acc.RunID || !again.Duplicate {
		t.Fatalf("the same delivery again: %d %s; want 200, run %s, duplicate", r.status, clip(r.body), acc.RunID)
	}
}

// TestHookRefusals: a delivery without a valid signature is 401 with a
// message saying what to send; an unknown hook 404; a body over the limit
// 413. None starts a run.
func TestHookRefusals(t *testing.T) {
	m := newHookMesh(t)
	body := []byte(`{"ref":"main"}`)
	old := strconv.FormatInt(time.Now().Add(-HookWindow-time.Minute).Unix(), 10)
	for _, tc := range []struct {
		what   string
		header []string
		want   string
	}{
		{"no signature", nil, "no X-Agentmesh-Signature header: send X-Agentmesh-Signature: sha256="},
		{"not hex", []string{HookSignatureHeader, "sha256=nope"}, `X-Agentmesh-Signature "sha256=nope" is not sha256=<64 hex digits>`},
		{"another secret", []string{HookSignatureHeader, SignHook([]byte("another-secret-of-16+"), body, "")}, "does not match the body"},
		{"the body changed", []string{HookSignatureHeader, SignHook(hookSecret, []byte(`{"ref":"evil"}`), "")}, "does not match the body"},
		{"timestamp not signed", []string{HookSignatureHeader, SignHook(hookSecret, body, ""), HookTimestampHeader, strconv.FormatInt(time.Now().Unix(), 10)}, "does not match the body"},
		{"stale timestamp", []string{HookSignatureHeader, SignHook(hookSecret, body, old), HookTimestampHeader, old}, "outside the 5m0s window: sign the delivery again"},
		{"bad timestamp", []string{HookSignatureHeader, SignHook(hookSecret, body, "soon"), HookTimestampHeader, "soon"}, `X-Agentmesh-Timestamp "soon" is not a Unix time`},
	} {
		r := m.do(t, "POST", "/api/hooks/deploy", "application/json", body, tc.header...)
		if msg := wantError(t, tc.what, r, 401, CodeUnauthorized); !strings.Contains(msg, tc.want) || !strings.HasPrefix(msg, `hook "deploy": `) {
			t.Errorf("%s: message %q lacks %q", tc.what, msg, tc.want)
		}
	}
	r := m.do(t, "POST", "/api/hooks/nope", "application/json", body, HookSignatureHeader, SignHook(hookSecret, body, ""))
	if msg := wantError(t, "unknown hook", r, 404, schemas.CodeNotFound); !strings.Contains(msg, `no hook "nope"`) {
		t.Errorf("unknown hook: %q", msg)
	}
	big := bytes.Repeat([]byte("a"), MaxHookBody+1)
	r = m.do(t, "POST", "/api/hooks/deploy", "text/plain", big, HookSignatureHeader, SignHook(hookSecret, big, ""))
	wantError(t, "a body over the limit", r, 413, schemas.CodeTooLarge)
	r = m.getJSON(t, "/api/runs")
	if r.status != 200 || strings.TrimSpace(string(r.body)) != "[]" {
		t.Errorf("refused deliveries started runs: %s", clip(r.body))
	}
}

// TestHookOptionRefusals: New refuses a hook that cannot be served.
func TestHookOptionRefusals(t *testing.T) {
	spec, err := client.ParsePipeline([]byte(hookPipeline), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		hooks []namedHook
		want  string
	}{
		{[]namedHook{{name: "a", Hook: Hook{Spec: spec, Secret: []byte("short")}}}, `hook "a": its secret is 5 bytes, give at least 16`},
		{[]namedHook{{name: "a.b", Hook: Hook{Spec: spec, Secret: hookSecret}}}, `hook name "a.b"`},
		{[]namedHook{{name: "a", Hook: Hook{Spec: spec, Secret: hookSecret}}, {name: "a", Hook: Hook{Spec: spec, Secret: hookSecret}}}, `hook "a" is given twice`},
		{[]namedHook{{name: "a", Hook: Hook{Secret: hookSecret}}}, `hook "a": invalid pipeline`},
	} {
		if _, err := hooksOf(tc.hooks); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want %q", tc.hooks[0].name, err, tc.want)
		}
	}
}

// FuzzHookSignature: any header values and body are checked without
// panicking, and only the right signature passes.
func FuzzHookSignature(f *testing.F) {
	f.Add("sha256=00", "", []byte("x"))
	f.Add(SignHook(hookSecret, []byte("x"), "1"), "1", []byte("x"))
	f.Add("sha256=", "99999999999999999999", []byte{})
	f.Fuzz(func(t *testing.T, sig, ts string, body []byte) {
		h := map[string][]string{HookSignatureHeader: {sig}}
		if ts != "" {
			h[HookTimestampHeader] = []string{ts}
		}
		now := time.Unix(1, 0)
		if _, err := checkHookSignature(h, body, hookSecret, now); err == nil && sig != SignHook(hookSecret, body, ts) && !strings.EqualFold(sig, SignHook(hookSecret, body, ts)) {
			t.Fatalf("signature %q for body %q and timestamp %q passed", sig, body, ts)
		}
	})
}
