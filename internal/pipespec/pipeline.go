package pipespec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentmesh/agentmesh/pipelinespec"
	"gopkg.in/yaml.v3"
)

// Load reads a pipeline spec from a YAML or JSON file (chosen by
// the .json extension; anything else is read as YAML). A step of kind
// pipeline that names a file gets that file's spec, read the same way
// with the path relative to the file naming it; a file that runs itself,
// directly or not, is an error.
func Load(path string) (pipelinespec.PipelineSpec, error) {
	return load(path, nil)
}

func load(path string, stack []string) (pipelinespec.PipelineSpec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return pipelinespec.PipelineSpec{}, fmt.Errorf("reading pipeline: %w", err)
	}
	format := "yaml"
	if strings.EqualFold(filepath.Ext(path), ".json") {
		format = "json"
	}
	spec, err := Parse(b, format)
	if err != nil {
		return spec, fmt.Errorf("%s: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return spec, fmt.Errorf("reading pipeline: %w", err)
	}
	return readSubFiles(spec, abs, stack)
}

// Parse decodes a pipeline spec written as "yaml" or "json".
// Unknown fields are errors (a misspelt depends_on must not be ignored).
// Parameter values are normalised to their JSON types, so the same pipeline
// written in YAML, in JSON or with the builder decodes to equal specs.
func Parse(data []byte, format string) (pipelinespec.PipelineSpec, error) {
	var spec pipelinespec.PipelineSpec
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
	return Normalize(spec)
}

// Normalize passes every step's params and every seed value through
// JSON so numbers, maps and lists have the types encoding/json gives them.
func Normalize(spec pipelinespec.PipelineSpec) (pipelinespec.PipelineSpec, error) {
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
		vals := make(map[string]pipelinespec.SeedValue, len(spec.Seed.Values))
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
		child, err := Normalize(*st.Pipeline.Spec)
		if err != nil {
			return spec, fmt.Errorf("step %q: pipeline.spec: %w", st.ID, err)
		}
		p := *st.Pipeline
		p.Spec = &child
		spec.Steps[i].Pipeline = &p
	}
	return spec, nil
}
