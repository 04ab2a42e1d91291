package gateway

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// Hook is a webhook trigger: a POST to /api/hooks/{name} whose body is
// signed with Secret submits Spec, with the body as its seed value
// HookSeed (TEXT, the body's media type as content hint).
type Hook struct {
	Spec   pipelinespec.PipelineSpec
	Secret []byte
}

// The headers of a webhook delivery and their limits (docs/http-api.md,
// "Webhooks").
const (
	// HookSignatureHeader carries "sha256=" and the hex HMAC-SHA256, keyed
	// with the hook's secret, of the body, or of "<timestamp>.<body>" when
	// HookTimestampHeader is sent.
	HookSignatureHeader = "X-Agentmesh-Signature"
	// HookTimestampHeader is the optional Unix time, in seconds, the
	// delivery was signed at; a delivery more than HookWindow away from
	// the gateway's clock is refused.
	HookTimestampHeader = "X-Agentmesh-Timestamp"
	HookWindow          = 5 * time.Minute
	// HookSeed is the seed value the body is given to the pipeline as:
	// map an input to it with seed.body.
	HookSeed = "body"
	// MaxHookBody bounds a delivery's body: it is a seed value of the
	// run's spec, which is one KV value.
	MaxHookBody = 256 << 10
	// MinHookSecret is the shortest secret a hook takes.
	MinHookSecret = 16
)

// ErrBadHook reports a hook option that cannot be used.
var ErrBadHook = errors.New("gateway: bad hook")

// WithHook serves the webhook trigger name (see Hook). Give it once per
// hook; New refuses a name given twice, a secret shorter than
// MinHookSecret bytes and a spec that does not validate.
func WithHook(name string, h Hook) Option {
	return func(c *config) { c.hooks = append(c.hooks, namedHook{name: name, Hook: h}) }
}

type namedHook struct {
	name string
	Hook
}

// ValidateHookName reports whether name can name a hook: 1 to 64
// letters, digits, '-', '_' or '=' (the hook's run ids start with
// hook-<name>-).
func ValidateHookName(name string) error {
	if err := bus.ValidateToken("hook name", name); err != nil {
		return err
	}
	if len(name) > maxHookName {
		return fmt.Errorf("%w: hook name %q is %d bytes long: use at most %d", bus.ErrInvalidName, name, len(name), maxHookName)
	}
	return nil
}

const maxHookName = 64

// hooksOf checks the hooks of cfg and returns them by name.
func hooksOf(hs []namedHook) (map[string]Hook, error) {
	out := make(map[string]Hook, len(hs))
	for _, h := range hs {
		if err := ValidateHookName(h.name); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadHook, err)
		}
		if _, dup := out[h.name]; dup {
			return nil, fmt.Errorf("%w: hook %q is given twice", ErrBadHook, h.name)
		}
		if len(h.Secret) < MinHookSecret {
			return nil, fmt.Errorf("%w: hook %q: its secret is %d bytes, give at least %d (e.g. openssl rand -hex 32)", ErrBadHook, h.name, len(h.Secret), MinHookSecret)
		}
		if err := h.Spec.Validate(); err != nil {
			return nil, fmt.Errorf("%w: hook %q: %w", ErrBadHook, h.name, err)
		}
		out[h.name] = h.Hook
	}
	return out, nil
}

// HookAccepted is the answer of POST /api/hooks/{name}: the run the
// delivery started. Duplicate is true when this very delivery (the same
// signature) was accepted before: the run is that one's.
type HookAccepted struct {
	RunID     string `json:"run_id"`
	Duplicate bool   `json:"duplicate,omitempty"`
}

func (g *Gateway) handleHook(w http.ResponseWriter, r *http.Request, c *conn) error {
	name := r.PathValue("name")
	hook, ok := g.hooks[name]
	if !ok {
		return fail(schemas.CodeNotFound, "no hook %q on this gateway (its operator declares hooks with agentmesh gateway --hook NAME=FILE)", clipHeader(name))
	}
	body, err := readBody(w, r, MaxHookBody)
	if err != nil {
		return err
	}
	sig, err := checkHookSignature(r.Header, body, hook.Secret, time.Now())
	if err != nil {
		return fail(CodeUnauthorized, "hook %q: %v", name, err)
	}
	if !utf8.Valid(body) {
		return fail(schemas.CodeInvalidRequest, "hook %q: the body is not UTF-8 text; it is given to the pipeline as a TEXT seed value", name)
	}
	hint := ""
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil {
		hint = mt
	}
	spec := hook.Spec
	values := make(map[string]pipelinespec.SeedValue, len(spec.Seed.Values)+1)
	for k, v := range spec.Seed.Values {
		values[k] = v
	}
	values[HookSeed] = pipelinespec.SeedValue{DataType: schemas.TypeText, ContentTypeHint: hint, Value: string(body)}
	spec.Seed.Values = values
	spec.Schedule = nil
	// The run id is the delivery's: a delivery sent again (a sender's
	// retry, or a replay) names the same run, which starts once.
	sum := sha256.Sum256(sig)
	runID := "hook-" + name + "-" + hex.EncodeToString(sum[:12])
	id, err := client.SubmitPipeline(r.Context(), c.js, c.names, spec, runID, g.cfg.source+"/hooks/"+name)
	if errors.Is(err, client.ErrRunExists) {
		writeJSON(w, http.StatusOK, HookAccepted{RunID: runID, Duplicate: true})
		return nil
	}
	if err != nil {
		return meshError("submitting the hook's pipeline", err)
	}
	writeJSON(w, http.StatusAccepted, HookAccepted{RunID: id})
	return nil
}

// checkHookSignature checks the delivery's signature header against body
// (and its timestamp, when sent, within HookWindow of now) with a
// constant-time compare, and returns the signature's bytes.
func checkHookSignature(h http.Header, body, secret []byte, now time.Time) ([]byte, error) {
	v := h.Get(HookSignatureHeader)
	if v == "" {
		return nil, fmt.Errorf("no %s header: send %s: sha256=<hex HMAC-SHA256 of the body, keyed with the hook's secret> (docs/http-api.md#webhooks)", HookSignatureHeader, HookSignatureHeader)
	}
	hexSig, ok := strings.CutPrefix(v, "sha256=")
	sig, err := hex.DecodeString(hexSig)
	if !ok || err != nil || len(sig) != sha256.Size {
		return nil, fmt.Errorf("%s %q is not sha256=<64 hex digits>", HookSignatureHeader, clipHeader(v))
	}
	mac := hmac.New(sha256.New, secret)
	if ts := h.Get(HookTimestampHeader); ts != "" {
		sec, err := strconv.ParseInt(ts, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s %q is not a Unix time in seconds", HookTimestampHeader, clipHeader(ts))
		}
		if d := now.Sub(time.Unix(sec, 0)); d > HookWindow || d < -HookWindow {
			return nil, fmt.Errorf("%s %d is %s away from the gateway's clock, outside the %s window: sign the delivery again with the current time", HookTimestampHeader, sec, d.Abs().Round(time.Second), HookWindow)
		}
		mac.Write([]byte(ts + "."))
	}
	mac.Write(body)
	if !hmac.Equal(mac.Sum(nil), sig) {
		return nil, fmt.Errorf("the %s does not match the body: sign the exact bytes sent (with the timestamp first, \"<%s>.<body>\", when %s is sent) with the hook's secret", HookSignatureHeader, HookTimestampHeader, HookTimestampHeader)
	}
	return sig, nil
}

// SignHook returns the HookSignatureHeader value of body signed with
// secret; ts, when not empty, is the HookTimestampHeader sent with it.
func SignHook(secret, body []byte, ts string) string {
	mac := hmac.New(sha256.New, secret)
	if ts != "" {
		mac.Write([]byte(ts + "."))
	}
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}
