package orchestrator

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentmesh/agentmesh/internal/pipespec"
	"github.com/agentmesh/agentmesh/orchestrator/pipeline"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// pipelinesIn returns the lookup of named pipelines in dir (nil for no
// dir): name N is the first of N.yaml, N.yml and N.json there.
func pipelinesIn(dir string) func(string) (pipelinespec.PipelineSpec, error) {
	if dir == "" {
		return nil
	}
	return func(name string) (pipelinespec.PipelineSpec, error) {
		if err := schemas.ValidateAgentName(name); err != nil { // no path in a name
			return pipelinespec.PipelineSpec{}, fmt.Errorf("pipeline name %q: %w", name, err)
		}
		for _, ext := range []string{".yaml", ".yml", ".json"} {
			path := filepath.Join(dir, name+ext)
			if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return pipespec.Load(path)
		}
		return pipelinespec.PipelineSpec{}, fmt.Errorf("no pipeline %q in %s (looked for %s.yaml, .yml and .json); add the file or fix the name", name, dir, name)
	}
}

// ValidatePipeline checks spec against the live contracts lookup returns,
// as a replica does when the spec is submitted, and returns the waves it
// would run: the validator a gateway checks pipelines with
// (gateway.WithValidator).
func ValidatePipeline(spec pipelinespec.PipelineSpec, lookup func(agent string) (schemas.AgentContract, bool)) ([][]string, error) {
	_, waves, err := pipeline.Validate(spec, lookup, route.NewRouter())
	return waves, err
}
