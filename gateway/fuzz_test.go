package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/internal/httpguard"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// FuzzPipelineRequest feeds pipeline bodies, content types and variables
// to the decoder of POST /api/pipelines: it never panics, and what it
// refuses is a 4xx error with a code and a message.
func FuzzPipelineRequest(f *testing.F) {
	f.Add([]byte("name: a\nsteps:\n  - {id: a, agent: TextAgent, inputs: {text: \"text:x\"}}\n"), "application/yaml", "")
	f.Add([]byte(`{"name":"a","steps":[{"id":"a","agent":"TextAgent","params":{"op":"upper"}}]}`), "application/json", "")
	f.Add([]byte("name: v\nvars: {n: 1}\nsteps:\n  - {id: a, agent: TextAgent, params: {op: \"${vars.n}\"}}\n"), "text/yaml; charset=utf-8", "n=2")
	f.Add([]byte("steps: [{id: a, agent: A, depends_on: [a]}]"), "", "x=y")
	f.Add([]byte("{"), "application/json", "")
	f.Add([]byte("name: x"), "multipart/form-data; boundary=", "")
	contract := text.New().Contract()
	lookup := func(agent string) (schemas.AgentContract, bool) {
		return contract, agent == contract.Name
	}
	f.Fuzz(func(t *testing.T, body []byte, contentType, vars string) {
		var vs []string
		if vars != "" {
			vs = strings.Split(vars, "&")
		}
		_, err := decodePipeline(body, contentType, vs, lookup, orchestrator.ValidatePipeline)
		if err == nil {
			return
		}
		var ae *apiError
		var pe *pipelineErr
		switch {
		case errors.As(err, &pe):
			if pe.Code != schemas.CodeInvalidPipeline || pe.Status != 400 || len(pe.problems) == 0 {
				t.Fatalf("pipeline error %+v", pe.apiError)
			}
		case errors.As(err, &ae):
			if ae.Status < 400 || ae.Status >= 500 || ae.Code == "" || ae.Message == "" {
				t.Fatalf("error %+v", ae)
			}
		default:
			t.Fatalf("an error without a code: %v", err)
		}
	})
}

// FuzzAuthorize feeds Authorization headers to the token check: only the
// gateway's token in a Bearer header passes.
func FuzzAuthorize(f *testing.F) {
	const token = "the-right-token-123456"
	for _, h := range []string{"Bearer " + token, "bearer  " + token + " ", "Bearer", "Basic " + token, "Bearer " + token + "x", "", "Bearer  "} {
		f.Add(h)
	}
	g := &Gateway{def: &conn{}, tokens: map[string]*conn{token: {}}}
	f.Fuzz(func(t *testing.T, header string) {
		r := httptest.NewRequest("GET", "/api/agents", nil)
		r.Header["Authorization"] = []string{header}
		c, err := g.authorize(r, false)
		scheme, rest, _ := strings.Cut(header, " ")
		want := header != "" && strings.EqualFold(scheme, "Bearer") && strings.TrimSpace(rest) == token
		if (err == nil) != want || (err == nil && c != g.tokens[token]) {
			t.Fatalf("header %q: conn %v, error %v; want passed %v", header, c, err, want)
		}
		var ae *apiError
		if err != nil && (!errors.As(err, &ae) || ae.Status != http.StatusUnauthorized || !errors.Is(err, ErrUnauthorized)) {
			t.Fatalf("header %q: error %v, want a 401", header, err)
		}
	})
}

// FuzzThumbnail feeds bytes to the thumbnail maker: an image becomes a
// small image, anything else an error answer, never a panic.
func FuzzThumbnail(f *testing.F) {
	img := image.NewRGBA(image.Rect(0, 0, 300, 20))
	img.Set(1, 1, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	f.Add(b.Bytes())
	f.Add([]byte("GIF89a\x01\x00\x01\x00"))
	f.Add([]byte("\xff\xd8\xff\xe0"))
	f.Add([]byte("RIFF\x00\x00\x00\x00WEBPVP8 "))
	f.Fuzz(func(t *testing.T, content []byte) {
		w := httptest.NewRecorder()
		err := writeThumbnail(w, bytes.NewReader(content), schemas.FileRef{ID: "f-x"})
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) {
				t.Fatalf("error without a code: %v", err)
			}
			return
		}
		out, _, derr := image.Decode(w.Body)
		if derr != nil {
			t.Fatalf("the thumbnail does not decode: %v", derr)
		}
		if b := out.Bounds(); b.Dx() > thumbSize || b.Dy() > thumbSize {
			t.Fatalf("thumbnail %v", b)
		}
	})
}

// FuzzRequestBodies feeds JSON bodies to the decoders of the API's
// request bodies: each is read or refused with malformed_event or
// too_large.
func FuzzRequestBodies(f *testing.F) {
	for _, s := range []string{`{"message":"hi"}`, `{"inputs":{"text":{"data_type":"TEXT","value":"x"}}}`, `{"value":[1,{"a":null}]}`,
		`{"reject":true,"comment":"no"}`, `{} {}`, `[`, `{"timeout_ms":1e99}`, ``} {
		f.Add([]byte(s))
	}
	g := &Gateway{cfg: config{maxBody: 1 << 16}}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, v := range []any{&ChatRequest{}, &TaskRequest{}, &ApproveRequest{}, &InputRequest{}} {
			r := httptest.NewRequest("POST", "/api/chat", bytes.NewReader(body))
			err := g.decodeJSON(httptest.NewRecorder(), r, v)
			var ae *apiError
			if err != nil && (!errors.As(err, &ae) || (ae.Code != schemas.CodeMalformedEvent && ae.Code != schemas.CodeTooLarge)) {
				t.Fatalf("body %q: %v", body, err)
			}
		}
	})
}

// FuzzRequestChecks feeds methods, Hosts, Origin, Sec-Fetch-Site and
// Content-Type headers to the checks every request passes (ServeHTTP) and
// to a JSON route's media type check: a refusal is a coded JSON error,
// and no state-changing request a browser marks as from another site, or
// whose Origin is another, reaches a route.
func FuzzRequestChecks(f *testing.F) {
	f.Add("POST", "127.0.0.1:8080", "http://evil.example", "cross-site", "text/plain")
	f.Add("POST", "127.0.0.1:8080", "http://127.0.0.1:8080", "same-origin", "application/json; charset=utf-8")
	f.Add("POST", "evil.example", "", "", "application/json")
	f.Add("GET", "localhost:8080", "null", "same-site", "")
	f.Add("PUT", "[::1]:8080", "http://[::1]:8080", "none", "multipart/form-data; boundary=x")
	guard, err := httpguard.New()
	if err != nil {
		f.Fatal(err)
	}
	local, _ := net.ResolveTCPAddr("tcp", "127.0.0.1:8080")
	f.Fuzz(func(t *testing.T, method, host, origin, site, contentType string) {
		r, err := http.NewRequest("GET", "http://127.0.0.1:8080/api/chat", nil)
		if err != nil {
			t.Fatal(err)
		}
		if method == "" || strings.ContainsAny(method, " \r\n\t") || !utf8.ValidString(method) {
			method = "POST"
		}
		r.Method, r.Host = method, host
		r.Header.Set("Origin", origin)
		r.Header.Set("Sec-Fetch-Site", site)
		r.Header.Set("Content-Type", contentType)
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, local))
		reached := false
		g := &Gateway{cfg: config{maxHeader: defaultMaxHeader}, guard: guard, mux: http.NewServeMux()}
		g.mux.HandleFunc("/", func(http.ResponseWriter, *http.Request) { reached = true })
		w := httptest.NewRecorder()
		g.ServeHTTP(w, r)
		safe := method == "GET" || method == "HEAD" || method == "OPTIONS"
		foreignSite := site == "cross-site" || site == "same-site"
		if reached && !safe && (foreignSite || (site == "" && origin != "" && origin != "http://"+host && origin != "https://"+host)) {
			t.Fatalf("%s from Origin %q (Sec-Fetch-Site %q) for Host %q reached the route", method, origin, site, host)
		}
		if reached && !httpguard.IsLoopback(host) {
			t.Fatalf("a request for Host %q reached the route", host)
		}
		if !reached {
			var e errorBody
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error == nil || e.Error.Code == "" || w.Code < 400 {
				t.Fatalf("refusal %d %q", w.Code, w.Body.String())
			}
		}
		err = bodyJSON.checkBody(r)
		mt, _, perr := mime.ParseMediaType(contentType)
		if (err == nil) != (perr == nil && mt == "application/json") {
			t.Fatalf("Content-Type %q: %v", contentType, err)
		}
	})
}

// FuzzListQuery feeds query strings to the list endpoints' parser and
// applies what it takes to a list of runs: it never panics, a refusal is
// 400 invalid_request with a message, and a page holds at most limit items
// of those that match, in the order asked for.
func FuzzListQuery(f *testing.F) {
	for _, q := range []string{"", "q=alpha+2&status=waiting,completed", "agent=TextAgent&sort=-name&limit=2&offset=1",
		"since=24h&until=2026-01-02T15:04:05Z", "status=done", "sort=colour", "since=yesterday", "offset=-1", "limit=99999999999999999999"} {
		f.Add(q)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var runs []state.RunSummary
	for i, st := range []string{"running", "completed", "failed", "completed", "running"} {
		r := state.RunSummary{ID: fmt.Sprintf("r-%d", i), Name: []string{"alpha", "beta"}[i%2], Status: st, Steps: i,
			Agents: []string{"TextAgent"}, CreatedAt: t0.Add(time.Duration(i) * time.Hour), UpdatedAt: t0.Add(time.Duration(10-i) * time.Hour)}
		if i == 4 {
			r.Waiting = map[string]string{"review": "approval: ship?"}
		}
		runs = append(runs, r)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		r := httptest.NewRequest("GET", "/api/runs", nil)
		r.URL.RawQuery = raw
		q, err := parseListQuery(r, "runs", runFields, t0.Add(24*time.Hour))
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.Status != 400 || ae.Code != schemas.CodeInvalidRequest || ae.Message == "" {
				t.Fatalf("refusal %v is not 400 invalid_request with a message", err)
			}
			return
		}
		page, total := apply(q, runFields, slices.Clone(runs))
		if total > len(runs) || (q.limit > 0 && len(page) > q.limit) || len(page) > total {
			t.Fatalf("query %q: a page of %d of %d matching, limit %d", raw, len(page), total, q.limit)
		}
		for i, it := range page {
			if !matches(q, runFields, it) {
				t.Fatalf("query %q: %s does not match", raw, it.ID)
			}
			if q.sort != "" && i > 0 {
				c := runFields.sorts[q.sort](page[i-1], it)
				if q.desc {
					c = -c
				}
				if c > 0 {
					t.Fatalf("query %q: %s before %s", raw, page[i-1].ID, it.ID)
				}
			}
		}
	})
}
