package a2a

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/agentmesh/agentmesh/schemas"
)

// RemoteFiles reads and keeps the files of a remote agent's tasks
// (resolvers.ObjectStore is one).
type RemoteFiles interface {
	FileStore
	Open(ctx context.Context, id string) (io.ReadCloser, schemas.FileRef, error)
}

// WithRemoteFiles gives the remote agent a FILE_IDS input "files", whose
// files it sends as raw parts, and a FILE_IDS output "files", where the
// raw parts of its answer are kept.
func WithRemoteFiles(f RemoteFiles) RemoteOption { return func(c *remoteConfig) { c.files = f } }

// maxRemoteFile bounds one file sent to a remote agent.
const maxRemoteFile = 32 << 20

// withFiles adds the files input and output to c.
func withFiles(c schemas.AgentContract) schemas.AgentContract {
	c.Inputs = append(c.Inputs, schemas.TypedInput{Name: "files", DataType: schemas.TypeFileIDs, Description: "files to send with the message"})
	c.Outputs = append(c.Outputs, schemas.TypedOutput{Name: "files", DataType: schemas.TypeFileIDs, Description: "the files of the agent's answer"})
	return c
}

// fileParts reads the task's files into raw parts.
func (r *Remote) fileParts(ctx context.Context, ec *schemas.ExecutionContext) ([]Part, error) {
	if r.files == nil || !ec.Has("files") {
		return nil, nil
	}
	fc, err := ec.Files("files")
	if err != nil {
		return nil, err
	}
	var parts []Part
	for _, id := range fc.IDs() {
		rc, ref, err := r.files.Open(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("reading file %s for %s: %w", id, r.contract.Name, err)
		}
		b, err := io.ReadAll(io.LimitReader(rc, maxRemoteFile+1))
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("reading file %s for %s: %w", id, r.contract.Name, err)
		}
		if len(b) > maxRemoteFile {
			return nil, fmt.Errorf("file %s is over %d MiB, too large to send to %s in a message", id, maxRemoteFile>>20, r.contract.Name)
		}
		parts = append(parts, Part{Raw: b, Filename: ref.Filename, MediaType: ref.MediaType})
	}
	return parts, nil
}

// outputs turns the answer's parts into the result's outputs: text parts
// (and data parts, as JSON) into "text", raw parts, stored, into "files";
// a file by URL is named in the text.
func (r *Remote) outputs(ctx context.Context, parts []Part) (map[string]schemas.TypedValue, string, error) {
	var text, raw []Part
	for _, p := range parts {
		switch {
		case p.Raw != nil && r.files != nil:
			raw = append(raw, p)
		case p.Raw != nil:
			text = append(text, TextPart(fmt.Sprintf("[file %q, %s, %d bytes]", p.Filename, p.MediaType, len(p.Raw))))
		case p.URL != "":
			text = append(text, TextPart(fmt.Sprintf("[file %q at %s]", p.Filename, p.URL)))
		default:
			text = append(text, p)
		}
	}
	answer := partsText(text)
	out := map[string]schemas.TypedValue{"text": schemas.TextValue(answer, r.contract.Name)}
	summary := schemas.Clip(answer, 200)
	if len(raw) > 0 {
		var ids []string
		for _, p := range raw {
			ref, err := r.files.Store(ctx, bytes.NewReader(p.Raw), p.MediaType, map[string]string{metaFilename: p.Filename})
			if err != nil {
				return nil, "", fmt.Errorf("keeping a file %s answered: %w", r.contract.Name, err)
			}
			ids = append(ids, ref.ID)
		}
		out["files"] = schemas.FilesValue(schemas.FromIDs("", ids...), r.contract.Name)
		summary = fmt.Sprintf("%s (%d files)", summary, len(ids))
	}
	return out, summary, nil
}
