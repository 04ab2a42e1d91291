package gateway

import (
	"bytes"
	"context"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

// apiSpec is openapi.json as kin-openapi reads it, for checking requests
// and answers in the API tests.
type apiSpec struct {
	doc *openapi3.T
}

// loadSpec loads and validates the embedded OpenAPI document.
func loadSpec(t testing.TB) *apiSpec {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(OpenAPI)
	if err != nil {
		t.Fatalf("openapi.json does not load: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.json is not a valid OpenAPI document: %v", err)
	}
	return &apiSpec{doc: doc}
}

// route finds the document's operation for a request, by the same
// segment matching the gateway's mux does.
func (s *apiSpec) route(method, path string) (*routers.Route, map[string]string) {
	for p, item := range s.doc.Paths.Map() {
		params, ok := pathParams(p, path)
		if !ok {
			continue
		}
		if op := item.GetOperation(method); op != nil {
			return &routers.Route{Spec: s.doc, Server: s.doc.Servers[0], Path: p, PathItem: item, Method: method, Operation: op}, params
		}
	}
	return nil, nil
}

func pathParams(pattern, path string) (map[string]string, bool) {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(xs) {
		return nil, false
	}
	params := map[string]string{}
	for i := range ps {
		if strings.HasPrefix(ps[i], "{") {
			v, err := url.PathUnescape(xs[i])
			if err != nil {
				return nil, false
			}
			params[strings.Trim(ps[i], "{}")] = v
		} else if ps[i] != xs[i] {
			return nil, false
		}
	}
	return params, true
}

// check validates an exchange against the document: the answer's status
// must be documented for the operation and its JSON body must match the
// schema; a request the document refuses must not be accepted. Paths
// outside /api/ (the dashboard, mounted bridges) are not the document's.
func (s *apiSpec) check(t *testing.T, req *http.Request, body []byte, r response) {
	t.Helper()
	rt, params := s.route(req.Method, req.URL.EscapedPath())
	if rt == nil {
		if strings.HasPrefix(req.URL.Path, "/api/") && r.status != http.StatusNotFound && r.status != http.StatusMethodNotAllowed {
			t.Errorf("%s %s: answered %d but the document has no such operation", req.Method, req.URL.Path, r.status)
		}
		return
	}
	opts := &openapi3filter.Options{IncludeResponseStatus: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}
	if rt.Method == http.MethodPost && rt.Path == "/api/files" {
		// A raw upload is any bytes under any type (*/* in the document); the
		// validator would parse curl's default form type as a form.
		if mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type")); mt != "multipart/form-data" {
			opts.ExcludeRequestBody = true
		}
	}
	req2 := req.Clone(context.Background())
	req2.Body = io.NopCloser(bytes.NewReader(body))
	in := &openapi3filter.RequestValidationInput{Request: req2, PathParams: params, Route: rt, Options: opts}
	if reqErr := openapi3filter.ValidateRequest(context.Background(), in); reqErr != nil && r.status < 400 {
		t.Errorf("%s %s: the gateway accepted (%d) a request the document refuses: %v", req.Method, req.URL.Path, r.status, reqErr)
	}
	ct, _, _ := mime.ParseMediaType(r.header.Get("Content-Type"))
	ropts := *opts
	if ct != "application/json" {
		ropts.ExcludeResponseBody = true // bytes of a file, an event stream
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: r.status, Header: r.header, Options: &ropts}
	out.SetBodyBytes(r.body)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("%s %s: the answer (%d %s) does not match the document: %v", req.Method, req.URL.Path, r.status, clip(r.body), err)
	}
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

// TestOpenAPIMatchesRoutes checks that every route the gateway registers
// has its path and method in openapi.json, and that the document lists no
// operation the gateway does not serve.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	s := loadSpec(t)
	g := &Gateway{}
	served := map[string]bool{}
	for _, rt := range g.apiRoutes() {
		key := rt.method + " " + rt.path
		served[key] = true
		item := s.doc.Paths.Value(rt.path)
		if item == nil || item.GetOperation(rt.method) == nil {
			t.Errorf("route %s is not in openapi.json", key)
		}
	}
	var documented []string
	for p, item := range s.doc.Paths.Map() {
		for method := range item.Operations() {
			key := method + " " + p
			documented = append(documented, key)
			if !served[key] {
				t.Errorf("openapi.json documents %s, which the gateway does not serve", key)
			}
		}
	}
	if len(documented) != len(served) {
		slices.Sort(documented)
		t.Errorf("openapi.json has %d operations, the gateway %d routes: %v", len(documented), len(served), documented)
	}
}
