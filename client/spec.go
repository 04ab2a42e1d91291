package client

import (
	"github.com/agentmesh/agentmesh/internal/pipespec"
	"github.com/agentmesh/agentmesh/pipelinespec"
)

// LoadPipeline reads a pipeline spec from a YAML or JSON file, with the
// sub-pipelines it names by file (see pipespec.Load).
func LoadPipeline(path string) (pipelinespec.PipelineSpec, error) { return pipespec.Load(path) }

// ParsePipeline decodes a pipeline spec written as "yaml" or "json" (see
// pipespec.Parse).
func ParsePipeline(data []byte, format string) (pipelinespec.PipelineSpec, error) {
	return pipespec.Parse(data, format)
}

// NormalizeSpec gives the values of spec their JSON types (see
// pipespec.Normalize).
func NormalizeSpec(spec pipelinespec.PipelineSpec) (pipelinespec.PipelineSpec, error) {
	return pipespec.Normalize(spec)
}
