package pipespec

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/pipelinespec"
)

// readSubFiles reads the file of every step of kind pipeline of spec (read
// from the file at path) that names one, into the step's spec.
func readSubFiles(spec pipelinespec.PipelineSpec, path string, stack []string) (pipelinespec.PipelineSpec, error) {
	stack = append(slices.Clone(stack), path)
	var errs []error
	for i, st := range spec.Steps {
		if st.Pipeline == nil || st.Pipeline.File == "" || st.Pipeline.Spec != nil {
			continue
		}
		file := st.Pipeline.File
		if !filepath.IsAbs(file) {
			file = filepath.Join(filepath.Dir(path), file)
		}
		if slices.Contains(stack, file) {
			errs = append(errs, fmt.Errorf("%w: step %q: pipeline.file %s runs a pipeline it is part of (%s -> %s): %w",
				ErrInvalidPipeline, st.ID, st.Pipeline.File, strings.Join(stack, " -> "), file, pipelinespec.ErrCycle))
			continue
		}
		if len(stack) > pipelinespec.MaxPipelineDepth {
			errs = append(errs, fmt.Errorf("%w: step %q: sub-pipelines nest more than %d deep", ErrInvalidPipeline, st.ID, pipelinespec.MaxPipelineDepth))
			continue
		}
		child, err := load(file, stack)
		if err != nil {
			errs = append(errs, fmt.Errorf("step %q: pipeline.file: %w", st.ID, err))
			continue
		}
		p := *st.Pipeline
		p.Spec = &child
		spec.Steps[i].Pipeline = &p
	}
	return spec, errors.Join(errs...)
}
