package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/internal/fixture"
)

// TestRunIDRace submits one run id many times at once, through one
// gateway and then through two gateways on one mesh: exactly one
// submission is accepted (202) and stored, every other is 409
// run_exists. The requests stream decides, not a lock of one gateway.
func TestRunIDRace(t *testing.T) {
	m := newTestMesh(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gw2, err := New(ctx, m.srv.Conn(t), testValidator)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw2.Close)
	http2 := httptest.NewServer(gw2)
	t.Cleanup(http2.Close)

	for _, tc := range []struct {
		name  string
		bases []string
	}{
		{"one gateway", []string{m.http.URL}},
		{"two gateways", []string{m.http.URL, http2.URL}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "race-" + strings.ReplaceAll(tc.name, " ", "-")
			before := m.requestsSeq(t)
			const each = 6
			var reqs []*http.Request
			for i := range each * len(tc.bases) {
				req, err := http.NewRequest("POST", tc.bases[i%len(tc.bases)]+"/api/pipelines?run_id="+id, strings.NewReader(gateSpec))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/yaml")
				reqs = append(reqs, req)
			}
			got := sendAtOnce(reqs)
			accepted := 0
			for i, r := range got {
				if r.err != nil {
					t.Fatalf("request %d: %v", i, r.err)
				}
				m.spec.check(t, reqs[i], []byte(gateSpec), r.response)
				switch r.status {
				case http.StatusAccepted:
					accepted++
				default:
					msg := wantError(t, fmt.Sprintf("request %d", i), r.response, http.StatusConflict, CodeRunExists)
					if !strings.Contains(msg, `"`+id+`"`) || !strings.Contains(msg, "another run_id") {
						t.Errorf("request %d: the conflict does not name the run and what to do: %s", i, msg)
					}
				}
			}
			if accepted != 1 {
				t.Fatalf("%d of %d submissions of run %s accepted, want exactly 1", accepted, len(got), id)
			}
			if after := m.requestsSeq(t); after != before+1 {
				t.Fatalf("the requests stream stored %d submissions, want 1", after-before)
			}
			if r := m.getJSON(t, "/api/runs/"+id); r.status != http.StatusOK {
				// The accepted one runs (the orchestrator stores it soon).
				if !fixture.Within(20*time.Second, func() bool {
					r = m.getJSON(t, "/api/runs/"+id)
					return r.status == http.StatusOK
				}) {
					t.Fatalf("the accepted run %s is not on the mesh: %d %s", id, r.status, clip(r.body))
				}
			}
		})
	}
}

// requestsSeq is the last sequence of the requests stream.
func (m *testMesh) requestsSeq(t *testing.T) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := m.res.Requests.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

type raceAnswer struct {
	response
	err error
}

// sendAtOnce sends reqs from one goroutine each, released together, and
// answers in the order of reqs.
func sendAtOnce(reqs []*http.Request) []raceAnswer {
	out := make([]raceAnswer, len(reqs))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, req := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				out[i].err = err
				return
			}
			defer resp.Body.Close()
			var b bytes.Buffer
			_, err = io.Copy(&b, resp.Body)
			out[i] = raceAnswer{response{status: resp.StatusCode, header: resp.Header, body: b.Bytes()}, err}
		}()
	}
	close(start)
	wg.Wait()
	return out
}
