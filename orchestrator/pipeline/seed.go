package pipeline

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// fileSeeds are the seed lists of file IDs, by seed name and content hint.
var fileSeeds = []struct{ name, hint string }{
	{"images", schemas.ContentImages},
	{"documents", schemas.ContentDocuments},
	{"links", schemas.ContentLinks},
}

func fileSeedIDs(seed pipelinespec.PipelineSeed, name string) []string {
	switch name {
	case "images":
		return seed.Images
	case "documents":
		return seed.Documents
	case "links":
		return seed.Links
	}
	return nil
}

// seedValue returns the seed called name ("images", "documents", "links"
// or the name of a seed value) as a typed value. found is false when the
// seed holds nothing under that name; known is false when name is none of
// the file lists and no seed value.
func seedValue(seed pipelinespec.PipelineSeed, name string) (v schemas.TypedValue, found, known bool) {
	for _, f := range fileSeeds {
		if f.name == name {
			ids := fileSeedIDs(seed, name)
			if len(ids) == 0 {
				return schemas.TypedValue{}, false, true
			}
			return schemas.FilesValue(schemas.FromIDs(f.hint, ids...), "seed"), true, true
		}
	}
	sv, ok := seed.Values[name]
	if !ok {
		return schemas.TypedValue{}, false, false
	}
	tv, err := sv.Typed("seed")
	return tv, err == nil, true
}

// seedNames lists the names of the seeds that hold something: the file
// lists first, then the seed values in name order.
func seedNames(seed pipelinespec.PipelineSeed) []string {
	var out []string
	for _, f := range fileSeeds {
		if len(fileSeedIDs(seed, f.name)) > 0 {
			out = append(out, f.name)
		}
	}
	return append(out, slices.Sorted(maps.Keys(seed.Values))...)
}

// seedSlots returns the slots a run starts with: each seed in the slot its
// data type and hint route to. Seeds whose type has no slot are reachable
// through "seed.<name>" only.
func seedSlots(seed pipelinespec.PipelineSeed, router *route.Router) map[string]schemas.TypedValue {
	slots := map[string]schemas.TypedValue{}
	for _, name := range seedNames(seed) {
		v, ok, _ := seedValue(seed, name)
		if !ok {
			continue
		}
		if slot, ok := router.SlotFor(v.DataType, v.ContentTypeHint); ok {
			slots[slot] = v
		}
	}
	return slots
}

// checkSeed checks each seed value against its data type's schema and that
// no two seeds fill the same slot.
func checkSeed(seed pipelinespec.PipelineSeed, router *route.Router) []error {
	var errs []error
	reg := router.DataTypes()
	filled := map[string]string{}
	for _, name := range seedNames(seed) {
		v, _, _ := seedValue(seed, name)
		where := "seed." + name
		if _, isValue := seed.Values[name]; isValue {
			where = "seed.values." + name
			sv := seed.Values[name]
			tv, err := sv.Typed("seed")
			if err == nil {
				err = reg.Validate(tv.DataType, tv.Value)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w; fix the value or its data_type", where, err))
				continue
			}
			v = tv
		}
		slot, ok := router.SlotFor(v.DataType, v.ContentTypeHint)
		if !ok {
			continue
		}
		if other, dup := filled[slot]; dup {
			errs = append(errs, fmt.Errorf("%s and %s both fill slot %s (%s%s); keep one of them", other, where, slot, v.DataType, route.HintSuffix(v.ContentTypeHint)))
			continue
		}
		filled[slot] = where
	}
	return errs
}

// checkSeedSource checks an input mapped to "seed.<name>".
func checkSeedSource(seed pipelinespec.PipelineSeed, in schemas.TypedInput, input, src, name string) error {
	v, found, known := seedValue(seed, name)
	if !known {
		have := orNone(seedNames(seed))
		return fmt.Errorf("%w: input %q maps to %s, but the seed has no value %q (it holds: %s); add it under seed.values.%s", ErrBadInputSource, input, src, name, have, name)
	}
	dataType := v.DataType
	if sv, ok := seed.Values[name]; ok {
		dataType = sv.DataType
	} else if !found {
		dataType = schemas.TypeFileIDs
	}
	if dataType != in.DataType {
		return fmt.Errorf("%w: input %q is %s but %s holds %s", ErrBadInputSource, input, in.DataType, src, dataType)
	}
	if !found && in.Required {
		return fmt.Errorf("%w: input %q maps to %s, but the seed has no %s; add them under seed.%s", route.ErrMissingInput, input, src, name, name)
	}
	return nil
}

// seedSource reads an input source "seed.<name>"; ok is false when src is
// no seed source.
func seedSource(seed pipelinespec.PipelineSeed, src string) (v schemas.TypedValue, found, ok bool) {
	name, ok := strings.CutPrefix(src, SourceSeedPrefix)
	if !ok {
		return schemas.TypedValue{}, false, false
	}
	v, found, _ = seedValue(seed, name)
	return v, found, true
}
