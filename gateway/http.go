package gateway

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/schemas"
)

// api wraps a route's handler: it finds the request's identity from its
// bearer token (when the gateway has tokens), runs the handler and writes
// a returned error as the JSON error answer.
func (g *Gateway) api(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := g.def
		if !rt.public {
			var err error
			if c, err = g.authorize(r, rt.stream); err != nil {
				w.Header().Set("WWW-Authenticate", `Bearer realm="agentmesh"`)
				g.writeError(w, r, err)
				return
			}
		}
		if err := rt.body.checkBody(r); err != nil {
			g.writeError(w, r, err)
			return
		}
		if err := rt.h(w, r, c); err != nil {
			g.writeError(w, r, err)
		}
	})
}

// authorize returns the conn of the request's bearer token: from the
// Authorization header, or, on an event stream (stream), the access_token
// query parameter (RFC 6750 section 2.3) for EventSource, which cannot set
// headers. Elsewhere a token in the address is refused: addresses end up
// in logs and histories. Without tokens configured every request uses the
// gateway's own connection.
func (g *Gateway) authorize(r *http.Request, stream bool) (*conn, error) {
	if len(g.tokens) == 0 {
		return g.def, nil
	}
	token := ""
	_, inQuery := r.URL.Query()["access_token"]
	switch h := r.Header.Get("Authorization"); {
	case h != "":
		scheme, rest, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return nil, fail(CodeUnauthorized, "the Authorization header is not 'Bearer <token>'")
		}
		token = strings.TrimSpace(rest)
	case inQuery && !stream:
		return nil, fail(CodeUnauthorized, "?access_token= is taken on event streams only (EventSource cannot send headers); send 'Authorization: Bearer <token>' on %s %s", r.Method, r.URL.Path)
	default:
		token = r.URL.Query().Get("access_token")
	}
	if token == "" {
		return nil, fail(CodeUnauthorized, "this gateway requires a bearer token: send 'Authorization: Bearer <token>' (or ?access_token= for event streams)")
	}
	for t, c := range g.tokens {
		if subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
			return c, nil
		}
	}
	return nil, fail(CodeUnauthorized, "the bearer token is not one this gateway knows; ask its operator for one (--token-file)")
}

// backlogRetryAfter is the Retry-After of a request refused with
// backlog_full, in seconds.
const backlogRetryAfter = "5"

// errorBody is the JSON of every error answer.
type errorBody struct {
	Error *apiError `json:"error"`
}

// writeError writes err as {"error":{"code","message"}} with the status
// that fits its code. Errors that are not the gateway's own are logged.
func (g *Gateway) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var pe *pipelineErr
	if errors.As(err, &pe) {
		writeJSON(w, pe.Status, invalidPipeline{Error: pe.apiError, Problems: pe.problems})
		return
	}
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = meshError(r.Method+" "+r.URL.Path, err)
	}
	if ae.Status >= 500 {
		g.cfg.logger.Warn("gateway request failed", "method", r.Method, "path", r.URL.Path, "code", ae.Code, "error", ae.Message)
	}
	if ae.Code == schemas.CodeBacklogFull {
		w.Header().Set("Retry-After", backlogRetryAfter) // the stream's consumers catch up
	}
	writeJSON(w, ae.Status, errorBody{ae})
}

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	_ = enc.Encode(v)
}

// readBody reads a request body of at most limit bytes; a larger one is
// too_large.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, fail(schemas.CodeTooLarge, "the request body is over %d bytes; send less (large content goes in files: POST /api/files)", limit)
	}
	if err != nil {
		return nil, fail(schemas.CodeMalformedEvent, "reading the request body: %v", err)
	}
	return body, nil
}

// decodeJSON reads a JSON request body into v, refusing unknown fields so a
// misspelt field is not silently ignored.
func (g *Gateway) decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := readBody(w, r, g.cfg.maxBody)
	if err != nil {
		return err
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return fail(schemas.CodeMalformedEvent, "the request body is empty; send a JSON object (see /api/openapi.json)")
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fail(schemas.CodeMalformedEvent, "the request body is not the JSON this endpoint takes: %v (see /api/openapi.json)", err)
	}
	if dec.More() {
		return fail(schemas.CodeMalformedEvent, "the request body holds more than one JSON value")
	}
	return nil
}

func (g *Gateway) handleNoRoute(w http.ResponseWriter, r *http.Request, _ *conn) error {
	var allow []string
	for _, rt := range g.routes {
		if matchPath(rt.path, r.URL.Path) && !slices.Contains(allow, rt.method) {
			allow = append(allow, rt.method)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		return &apiError{Status: http.StatusMethodNotAllowed, Code: schemas.CodeInvalidRequest,
			Message: fmt.Sprintf("%s does not take %s; it takes %s", r.URL.Path, r.Method, strings.Join(allow, " or "))}
	}
	return fail(schemas.CodeNotFound, "no endpoint %s %s; the API is described at /api/openapi.json", r.Method, r.URL.Path)
}

// matchPath reports whether path matches a route's pattern segment by
// segment ({x} matches any one segment).
func matchPath(pattern, path string) bool {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(xs) {
		return false
	}
	for i := range ps {
		if !strings.HasPrefix(ps[i], "{") && ps[i] != xs[i] {
			return false
		}
	}
	return true
}
