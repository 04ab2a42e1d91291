package gateway

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/agentmesh/agentmesh/internal/httpguard"
	"github.com/agentmesh/agentmesh/schemas"
)

// contentSecurityPolicy lets the dashboard load its own scripts, styles and
// images and talk to its own API, and nothing else: no inline script, no
// other origin, no framing by another site.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"connect-src 'self'; font-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// defaultMaxHeader bounds a request's line and headers unless WithMaxHeader
// says.
const defaultMaxHeader = 32 << 10

// check is what the gateway checks before any route sees a request, and
// the headers every answer carries (see ServeHTTP). It answers a refusal
// itself and reports false.
func (g *Gateway) check(w http.ResponseWriter, r *http.Request) bool {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if n := headerBytes(r); n > g.cfg.maxHeader {
		writeJSON(w, http.StatusRequestHeaderFieldsTooLarge, errorBody{&apiError{Status: http.StatusRequestHeaderFieldsTooLarge, Code: schemas.CodeTooLarge,
			Message: fmt.Sprintf("the request line and headers are %d bytes, over the gateway's limit of %d; send fewer or shorter headers", n, g.cfg.maxHeader)}})
		return false
	}
	if err := g.guard.Check(r); err != nil {
		code := CodeCrossOrigin
		if errors.Is(err, httpguard.ErrForeignHost) {
			code = CodeForeignHost
		}
		writeJSON(w, http.StatusForbidden, errorBody{fail(code, "%s", strings.TrimPrefix(err.Error(), "httpguard: "))})
		return false
	}
	return true
}

// headerBytes is about the size of r's request line and headers as sent.
func headerBytes(r *http.Request) int64 {
	n := int64(len(r.Method) + len(r.RequestURI) + len(r.Proto) + len(r.Host) + 4)
	for k, vs := range r.Header {
		for _, v := range vs {
			n += int64(len(k) + len(v) + 4)
		}
	}
	return n
}

// bodyKind is what a route takes as its request body. A browser may send
// another site's form or text/plain body without asking (a "simple"
// request); no route takes those media types, so such a request is refused
// before it does anything.
type bodyKind int

const (
	bodyNone     bodyKind = iota // no body: GETs, cancel
	bodyJSON                     // application/json
	bodyPipeline                 // a pipeline: YAML or JSON (pipelineTypes)
	bodyUpload                   // a file's bytes, of any media type, or multipart/form-data
)

// pipelineTypes are the media types a pipeline is sent as, and the format
// each is read in.
var pipelineTypes = map[string]string{
	"application/json": "json",
	"application/yaml": "yaml", "application/x-yaml": "yaml", "text/yaml": "yaml", "text/x-yaml": "yaml",
}

// checkBody refuses a request whose Content-Type the route does not take
// (415).
func (k bodyKind) checkBody(r *http.Request) error {
	var want []string
	switch k {
	case bodyJSON:
		want = []string{"application/json"}
	case bodyPipeline:
		want = []string{"application/yaml", "application/json"}
	default:
		return nil
	}
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	switch {
	case ct == "":
		err = errors.New("no Content-Type")
	case err != nil:
		err = fmt.Errorf("Content-Type %q: %w", clipHeader(ct), err)
	case k == bodyJSON && mt == "application/json", k == bodyPipeline && pipelineTypes[mt] != "":
		return nil
	default:
		err = fmt.Errorf("Content-Type %q", mt)
	}
	return &apiError{Status: http.StatusUnsupportedMediaType, Code: schemas.CodeInvalidRequest,
		Message: fmt.Sprintf("%v: %s %s takes %s (forms and text/plain are refused: any web page could send them)",
			err, r.Method, r.URL.Path, strings.Join(want, " or "))}
}

func clipHeader(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}
