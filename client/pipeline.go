package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"gopkg.in/yaml.v3"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
	"github.com/agentmesh/agentmesh/telemetry"
)

// LoadPipeline reads a pipeline spec from a YAML or JSON file (chosen by
// the .json extension; anything else is read as YAML). A step of kind
// pipeline that names a file gets that file's spec, read the same way
// with the path relative to the file naming it; a file that runs itself,
// directly or not, is an error.
func LoadPipeline(path string) (schemas.PipelineSpec, error) {
	return loadPipeline(path, nil)
}

func loadPipeline(path string, stack []string) (schemas.PipelineSpec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return schemas.PipelineSpec{}, fmt.Errorf("reading pipeline: %w", err)
	}
	format := "yaml"
	if strings.EqualFold(filepath.Ext(path), ".json") {
		format = "json"
	}
	spec, err := ParsePipeline(b, format)
	if err != nil {
		return spec, fmt.Errorf("%s: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return spec, fmt.Errorf("reading pipeline: %w", err)
	}
	return readSubFiles(spec, abs, stack)
}

// ParsePipeline decodes a pipeline spec written as "yaml" or "json".
// Unknown fields are errors (a misspelt depends_on must not be ignored).
// Parameter values are normalised to their JSON types, so the same pipeline
// written in YAML, in JSON or with the builder decodes to equal specs.
func ParsePipeline(data []byte, format string) (schemas.PipelineSpec, error) {
	var spec schemas.PipelineSpec
	switch format {
	case "json":
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&spec); err != nil {
			return spec, fmt.Errorf("%w: JSON does not decode: %w", ErrInvalidPipeline, err)
		}
	case "yaml", "yml", "":
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&spec); err != nil {
			return spec, fmt.Errorf("%w: YAML does not decode: %w", ErrInvalidPipeline, err)
		}
	default:
		return spec, fmt.Errorf("%w: unknown format %q; use yaml or json", ErrInvalidPipeline, format)
	}
	return NormalizeSpec(spec)
}

// NormalizeSpec passes every step's params and every seed value through
// JSON so numbers, maps and lists have the types encoding/json gives them.
func NormalizeSpec(spec schemas.PipelineSpec) (schemas.PipelineSpec, error) {
	for i := range spec.Steps {
		p := spec.Steps[i].Params
		if len(p) == 0 {
			spec.Steps[i].Params = nil
			continue
		}
		b, err := json.Marshal(p)
		if err != nil {
			return spec, fmt.Errorf("%w: step %q: params cannot be encoded as JSON: %w", ErrInvalidPipeline, spec.Steps[i].ID, err)
		}
		var out map[string]any
		if err := json.Unmarshal(b, &out); err != nil {
			return spec, err
		}
		spec.Steps[i].Params = out
	}
	if len(spec.Vars) > 0 {
		// As JSON has them (a YAML integer becomes a number), so a
		// condition is checked against the types it runs with.
		b, err := json.Marshal(spec.Vars)
		if err != nil {
			return spec, fmt.Errorf("%w: vars cannot be encoded as JSON: %w", ErrInvalidPipeline, err)
		}
		var out map[string]any
		if err := json.Unmarshal(b, &out); err != nil {
			return spec, err
		}
		spec.Vars = out
	}
	if len(spec.Seed.Values) > 0 {
		vals := make(map[string]schemas.SeedValue, len(spec.Seed.Values))
		for name, v := range spec.Seed.Values {
			b, err := json.Marshal(v.Value)
			if err != nil {
				return spec, fmt.Errorf("%w: seed.values.%s cannot be encoded as JSON: %w", ErrInvalidPipeline, name, err)
			}
			v.Value = nil
			if err := json.Unmarshal(b, &v.Value); err != nil {
				return spec, err
			}
			vals[name] = v
		}
		spec.Seed.Values = vals
	}
	for i, st := range spec.Steps {
		if st.Pipeline == nil || st.Pipeline.Spec == nil {
			continue
		}
		child, err := NormalizeSpec(*st.Pipeline.Spec)
		if err != nil {
			return spec, fmt.Errorf("step %q: pipeline.spec: %w", st.ID, err)
		}
		p := *st.Pipeline
		p.Spec = &child
		spec.Steps[i].Pipeline = &p
	}
	return spec, nil
}

// SubmitPipeline publishes spec as an io.agentmesh.pipeline.submitted event
// on names.PipelineSubmit() (mesh.pipeline.submit, or the client's own
// subject, which makes it the run's owner) with a JetStream publish (the
// ack says the request was accepted) and returns the run id: runID, or the
// event id when runID is empty. A runID that another submission named
// first, within the requests stream's duplicate window, fails with
// ErrRunExists: the stream decides, so of two submissions of one run id at
// once, from any clients or gateways, exactly one is accepted. (A run id
// used longer ago is refused by the orchestrator, on the submission's
// event id.) It records a producer span "pipeline submit" whose context
// the submission carries as its traceparent: the run's spans join its
// trace.
func SubmitPipeline(ctx context.Context, js jetstream.JetStream, names bus.Names, spec schemas.PipelineSpec, runID, source string) (_ string, err error) {
	ctx, span := telemetry.Start(ctx, "pipeline submit", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("agentmesh.pipeline.name", spec.Name)))
	defer func() { telemetry.End(span, err) }()
	if source == "" {
		source = "agentmesh/client"
	}
	ev, err := bus.NewEvent(bus.TypePipelineSubmitted, source, spec)
	if err != nil {
		return "", err
	}
	return submit(ctx, js, names, ev, runID, span)
}

// submit publishes ev, a submission of run runID (the event id when
// empty), as SubmitPipeline says.
func submit(ctx context.Context, js jetstream.JetStream, names bus.Names, ev bus.Event, runID string, span trace.Span) (string, error) {
	if runID == "" {
		runID = ev.ID
	} else if err := bus.ValidateToken("run id", runID); err != nil {
		return "", err
	}
	ev.SetExt(bus.ExtRunID, runID)
	span.SetAttributes(telemetry.AttrRunID.String(runID))
	SetTraceParent(ctx, &ev)
	msg, err := bus.Encode(names.PipelineSubmit(), ev)
	if err != nil {
		return "", err
	}
	msg.Header.Set(jetstream.MsgIDHeader, "submit-"+runID)
	if _, err := bus.PublishNew(ctx, js, msg); err != nil {
		if errors.Is(err, bus.ErrDuplicate) {
			return "", fmt.Errorf("%w: run id %q was submitted by another request first, and this submission was dropped (%w); submit with another run id, or none to have one made", ErrRunExists, runID, err)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return "", fmt.Errorf("submitting pipeline: no JetStream ack (is the mesh provisioned?): %w", err)
		}
		return "", fmt.Errorf("submitting pipeline: %w", err)
	}
	return runID, nil
}
