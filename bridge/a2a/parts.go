package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/schemas"
)

// MetaInput is the part metadata key that names the contract input a part
// fills: {"metadata": {"agentmesh.input": "text"}}.
const MetaInput = "agentmesh.input"

// source is the TypedValue source of values that came in over A2A.
const source = "a2a"

// FileStore keeps file bytes that arrive in raw parts
// (resolvers.ObjectStore is one).
type FileStore interface {
	Store(ctx context.Context, content io.Reader, mediaType string, metadata map[string]string) (schemas.FileRef, error)
}

// metaFilename is the metadata key resolvers.ObjectStore names a file by.
const metaFilename = "filename"

// fileBatch is the raw parts bound for one FILE_IDS input.
type fileBatch struct {
	input schemas.TypedInput
	parts []Part
}

// taskFromMessage turns msg into a task for the agent of contract c:
//   - a part whose metadata names an input (MetaInput) fills that input;
//   - a data part holding an object fills the inputs its keys name, and
//     its "params" and "instruction" keys set those;
//   - text parts fill the one TEXT input the message leaves empty, else
//     they are the task's instruction;
//   - raw file parts are stored with files and fill the one FILE_IDS input
//     the message leaves empty.
//
// Everything is checked before a file is stored, so a refused message
// stores nothing.
func taskFromMessage(ctx context.Context, c schemas.AgentContract, msg *Message, files FileStore) (schemas.TaskRequest, error) {
	task := schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{}, TimeoutMS: c.TimeoutMS}
	pl := plan{c: c, task: &task, batches: map[string]*fileBatch{}}
	for i, p := range msg.Parts {
		if err := pl.add(i, p); err != nil {
			return task, err
		}
	}
	if err := placeTexts(&task, c, pl.texts); err != nil {
		return task, err
	}
	batches := pl.batches
	if len(pl.loose) > 0 {
		in, ok := emptyInput(task, c, schemas.TypeFileIDs)
		if !ok {
			return task, fmt.Errorf("%w: the message has file parts but %s has no FILE_IDS input left to fill (inputs: %s)", ErrInvalidParams, c.Name, inputNames(c))
		}
		batches[in.Name] = &fileBatch{input: in, parts: pl.loose}
	}
	for name := range batches {
		if _, dup := task.Inputs[name]; dup {
			return task, fmt.Errorf("%w: input %q is given twice (in file parts and elsewhere)", ErrInvalidParams, name)
		}
	}
	if err := checkTask(c, task, batches); err != nil {
		return task, err
	}
	if len(batches) > 0 && files == nil {
		return task, fmt.Errorf("%w: this bridge has no object store to keep file parts in", ErrContentType)
	}
	for _, name := range slices.Sorted(mapKeys(batches)) {
		v, err := storeFiles(ctx, files, batches[name])
		if err != nil {
			return task, err
		}
		task.Inputs[name] = v
	}
	return task, nil
}

// plan sorts a message's parts: values go into the task at once, plain
// texts and file bytes wait until every part is seen.
type plan struct {
	c       schemas.AgentContract
	task    *schemas.TaskRequest
	texts   []string
	batches map[string]*fileBatch // file parts that name their input
	loose   []Part                // file parts for the one FILE_IDS input left
}

// add takes part i.
func (pl *plan) add(i int, p Part) error {
	kind, err := p.kind()
	if err != nil {
		return fmt.Errorf("%w: parts[%d]: %v", ErrInvalidParams, i, err)
	}
	name, _ := p.Metadata[MetaInput].(string)
	var in schemas.TypedInput
	if name != "" {
		var ok bool
		if in, ok = pl.c.Input(name); !ok {
			return fmt.Errorf("%w: parts[%d]: metadata %s names input %q, which %s does not have (inputs: %s)",
				ErrInvalidParams, i, MetaInput, name, pl.c.Name, inputNames(pl.c))
		}
	}
	switch {
	case kind == "url":
		return fmt.Errorf("%w: parts[%d]: a file by URL (%s) is not fetched by the bridge: send its bytes as a raw part", ErrContentType, i, clip(p.URL))
	case kind == "raw" && name == "":
		pl.loose = append(pl.loose, p)
	case kind == "raw":
		if in.DataType != schemas.TypeFileIDs {
			return fmt.Errorf("%w: parts[%d]: input %q is %s, not FILE_IDS: file bytes cannot fill it", ErrInvalidParams, i, name, in.DataType)
		}
		if pl.batches[name] == nil {
			pl.batches[name] = &fileBatch{input: in}
		}
		pl.batches[name].parts = append(pl.batches[name].parts, p)
	case kind == "text" && name == "":
		pl.texts = append(pl.texts, *p.Text)
	case kind == "text":
		err = setInput(pl.task, in, textValue(in, *p.Text))
	case kind == "data" && name == "":
		err = applyData(pl.task, pl.c, p.Data)
	case kind == "data":
		err = setInput(pl.task, in, p.Data)
	}
	if err != nil {
		return fmt.Errorf("parts[%d]: %w", i, err)
	}
	return nil
}

// applyData reads a data part holding {"<input>": value, "params": {...},
// "instruction": "..."}.
func applyData(task *schemas.TaskRequest, c schemas.AgentContract, data json.RawMessage) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		return fmt.Errorf("%w: a data part without metadata %q must be an object of input names (%s), \"params\" and \"instruction\"",
			ErrInvalidParams, MetaInput, inputNames(c))
	}
	for _, key := range slices.Sorted(mapKeys(fields)) {
		raw := fields[key]
		if in, ok := c.Input(key); ok {
			if err := setInput(task, in, raw); err != nil {
				return err
			}
			continue
		}
		switch key {
		case "params":
			var p map[string]any
			if err := json.Unmarshal(raw, &p); err != nil || p == nil {
				return fmt.Errorf("%w: \"params\" must be an object of the agent's parameters", ErrInvalidParams)
			}
			task.Params = p
		case "instruction":
			if err := json.Unmarshal(raw, &task.Instruction); err != nil {
				return fmt.Errorf("%w: \"instruction\" must be a string", ErrInvalidParams)
			}
		default:
			return fmt.Errorf("%w: data key %q is no input of %s: use one of %s, \"params\" or \"instruction\"", ErrInvalidParams, key, c.Name, inputNames(c))
		}
	}
	return nil
}

// placeTexts puts the message's plain text parts into the one TEXT input
// still empty, or into the instruction.
func placeTexts(task *schemas.TaskRequest, c schemas.AgentContract, texts []string) error {
	if len(texts) == 0 {
		return nil
	}
	joined := strings.Join(texts, "\n")
	if in, ok := emptyInput(*task, c, schemas.TypeText); ok {
		return setInput(task, in, textValue(in, joined))
	}
	if task.Instruction != "" {
		task.Instruction += "\n"
	}
	task.Instruction += joined
	return nil
}

// emptyInput returns the input of dataType the task leaves empty, when
// there is exactly one (the required one, if several are empty but one is
// required).
func emptyInput(task schemas.TaskRequest, c schemas.AgentContract, dataType string) (schemas.TypedInput, bool) {
	var empty, required []schemas.TypedInput
	for _, in := range c.Inputs {
		if _, set := task.Inputs[in.Name]; set || in.DataType != dataType {
			continue
		}
		empty = append(empty, in)
		if in.Required {
			required = append(required, in)
		}
	}
	switch {
	case len(empty) == 1:
		return empty[0], true
	case len(required) == 1:
		return required[0], true
	}
	return schemas.TypedInput{}, false
}

// textValue is the JSON of text for input in: a JSON string for a TEXT
// input, the text itself (JSON of the value) for any other.
func textValue(in schemas.TypedInput, text string) json.RawMessage {
	if in.DataType == schemas.TypeText {
		b, _ := json.Marshal(text)
		return b
	}
	return json.RawMessage(text)
}

// setInput sets input in from raw, the value's JSON; for FILE_IDS a plain
// array of file ids is taken as a collection.
func setInput(task *schemas.TaskRequest, in schemas.TypedInput, raw json.RawMessage) error {
	if _, dup := task.Inputs[in.Name]; dup {
		return fmt.Errorf("%w: input %q is given twice", ErrInvalidParams, in.Name)
	}
	if in.DataType == schemas.TypeFileIDs {
		var ids []string
		if json.Unmarshal(raw, &ids) == nil {
			task.Inputs[in.Name] = schemas.FilesValue(schemas.FromIDs(in.ContentTypeHint, ids...), source)
			return nil
		}
	}
	if !json.Valid(raw) {
		return fmt.Errorf("%w: input %q: the value is not JSON", ErrInvalidParams, in.Name)
	}
	task.Inputs[in.Name] = schemas.TypedValue{DataType: in.DataType, ContentTypeHint: in.ContentTypeHint, Value: raw, Source: source}
	return nil
}

// checkTask checks the inputs against their types' schemas (the types the
// default registry knows; the agent checks its own), the required inputs
// and the params.
func checkTask(c schemas.AgentContract, task schemas.TaskRequest, files map[string]*fileBatch) error {
	reg := schemas.DefaultRegistry()
	for _, name := range slices.Sorted(mapKeys(task.Inputs)) {
		v := task.Inputs[name]
		if _, known := reg.Lookup(v.DataType); !known {
			continue
		}
		if err := reg.Validate(v.DataType, v.Value); err != nil {
			return fmt.Errorf("%w: input %q (%s): %v", ErrInvalidParams, name, v.DataType, err)
		}
	}
	var missing []string
	for _, in := range c.Inputs {
		if _, set := task.Inputs[in.Name]; in.Required && !set && files[in.Name] == nil {
			missing = append(missing, fmt.Sprintf("%s (%s)", in.Name, in.DataType))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s needs input %s: send it as a part with metadata {%q: name}, or in a data part {\"<input>\": value}",
			ErrInvalidParams, c.Name, strings.Join(missing, ", "), MetaInput)
	}
	if err := c.ValidateParams(task.Params); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidParams, err)
	}
	return nil
}

// storeFiles keeps the bytes of b's parts and returns the collection of
// their ids.
func storeFiles(ctx context.Context, files FileStore, b *fileBatch) (schemas.TypedValue, error) {
	ids := make([]string, 0, len(b.parts))
	for _, p := range b.parts {
		var meta map[string]string
		if p.Filename != "" {
			meta = map[string]string{metaFilename: p.Filename}
		}
		ref, err := files.Store(ctx, bytes.NewReader(p.Raw), p.MediaType, meta)
		if err != nil {
			return schemas.TypedValue{}, fmt.Errorf("storing file part %q for input %q: %w", p.Filename, b.input.Name, err)
		}
		ids = append(ids, ref.ID)
	}
	return schemas.FilesValue(schemas.FromIDs(b.input.ContentTypeHint, ids...), source), nil
}

func inputNames(c schemas.AgentContract) string {
	if len(c.Inputs) == 0 {
		return "none"
	}
	names := make([]string, len(c.Inputs))
	for i, in := range c.Inputs {
		names[i] = in.Name
	}
	return strings.Join(names, ", ")
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// artifactsOf turns a result's outputs into artifacts, in the contract's
// order of outputs (then any others by name): a TEXT output is a text
// part, any other a data part holding the value, with its data type and
// content hint in the part's metadata.
func artifactsOf(c schemas.AgentContract, res schemas.AgentResult) []Artifact {
	var names []string
	for _, out := range c.Outputs {
		if _, ok := res.Outputs[out.Name]; ok {
			names = append(names, out.Name)
		}
	}
	for _, n := range slices.Sorted(mapKeys(res.Outputs)) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	arts := make([]Artifact, 0, len(names))
	for _, n := range names {
		v := res.Outputs[n]
		var p Part
		if s, err := v.Text(); err == nil && v.DataType == schemas.TypeText {
			p = TextPart(s)
		} else {
			p = Part{Data: v.Value, MediaType: modeJSON}
		}
		p.Metadata = map[string]any{"data_type": v.DataType}
		if v.ContentTypeHint != "" {
			p.Metadata["content_type_hint"] = v.ContentTypeHint
		}
		a := Artifact{ArtifactID: n, Name: n, Parts: []Part{p}}
		if out, ok := c.Output(n); ok {
			a.Description = out.Description
		}
		arts = append(arts, a)
	}
	return arts
}
