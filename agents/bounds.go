package agents

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/schemas"
)

// DefaultMaxCollection is how many file ids a spilled collection an agent
// is asked to resolve may hold (WithMaxCollection).
const DefaultMaxCollection = 100_000

// Bounds of a result too large to publish (see boundResult).
const (
	// headroom is kept under the server's max payload for the headers
	// the publish adds (Nats-Msg-Id) and their framing.
	headroom = 8 << 10
	// maxCutMessage is the length, in characters, an error message or
	// summary is cut to when the result does not fit.
	maxCutMessage = 16 << 10
)

// checkCollection refuses an input that is a spilled collection of more
// file ids than the runtime resolves, before it is read.
func (r *Runtime) checkCollection(name string, v schemas.TypedValue) error {
	if v.DataType != schemas.TypeFileIDs {
		return nil
	}
	fc, err := v.Files()
	if err != nil || !fc.Spilled() || fc.Count() <= r.cfg.maxCollection {
		return nil
	}
	return &schemas.LimitError{Limit: fmt.Sprintf("input %q: file ids in spilled collection %s", name, fc.Ref()), Value: fc.Count(), Max: r.cfg.maxCollection,
		Hint: "split it into smaller collections, or raise the agent's limit (--max-collection, agents.WithMaxCollection)"}
}

// maxResultBytes is the largest result message the server takes, less
// headroom.
func (r *Runtime) maxResultBytes() int {
	mp := r.nc.MaxPayload()
	if mp <= 0 { // not connected yet: the server's default
		mp = 1 << 20
	}
	return int(max(mp-headroom, 1<<10))
}

// msgSize is what msg takes against the server's max payload: its body
// and its headers.
func msgSize(msg *nats.Msg) int {
	n := len(msg.Data) + len("NATS/1.0\r\n\r\n")
	for k, vs := range msg.Header {
		for _, v := range vs {
			n += len(k) + len(v) + len(": \r\n")
		}
	}
	return n
}

// boundResult is res cut to fit in a message when its message took size
// bytes, more than limit: a failure keeps its code (keep) with its
// message and summary cut, saying how much was left out; a success, or a
// failure without keep, becomes a failure of code too_large saying so.
// Either way the task gets one answer.
func boundResult(res schemas.AgentResult, size, limit int, keep bool) schemas.AgentResult {
	cut := func(s string) string {
		if len(s) <= maxCutMessage {
			return s
		}
		return fmt.Sprintf("%s (%d more bytes left out: the result was %d bytes, more than the %d a message may hold)",
			schemas.Clip(s, maxCutMessage), len(s)-len(schemas.Clip(s, maxCutMessage)), size, limit)
	}
	out := schemas.AgentResult{Agent: res.Agent, Capability: res.Capability, Metrics: res.Metrics, Summary: cut(res.Summary)}
	if keep && !res.Success && res.Error != nil {
		out.Error = &schemas.ResultError{Code: res.Error.Code, Message: cut(res.Error.Message), Retryable: res.Error.Retryable}
		return out
	}
	outputs := []string{}
	for _, name := range slices.Sorted(maps.Keys(res.Outputs)) {
		outputs = append(outputs, fmt.Sprintf("%s (%s, %d bytes)", name, res.Outputs[name].DataType, len(res.Outputs[name].Value)))
	}
	out.Summary = schemas.Clip(out.Summary, 1000)
	out.Error = &schemas.ResultError{Code: schemas.CodeTooLarge, Message: fmt.Sprintf(
		"%s's result was %d bytes, more than the %d a message may hold, and is left out (outputs: %s); produce less: put large content in files (agentmesh files put) and return their ids (large file collections are spilled to the object store)",
		res.Agent, size, limit, orNone(outputs))}
	return out
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
