package folder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/internal/fileagent"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// Name is the agent's name on the mesh.
const Name = "FolderAgent"

// MaxFolderName is the longest folder name accepted, in bytes.
const MaxFolderName = 64

// ErrBadFolderName reports a category that cannot name a folder.
var ErrBadFolderName = errors.New("category cannot be a folder name")

// Agent is the FolderAgent.
type Agent struct {
	cat resolvers.Catalog
}

var _ agents.Agent = (*Agent)(nil)

// New returns a FolderAgent that files into folders through cat.
func New(cat resolvers.Catalog) (*Agent, error) {
	return fileagent.New("folder", cat, &Agent{cat: cat})
}

// Contract declares ORGANIZATION: a categorisation in, the folders out.
func (a *Agent) Contract() schemas.AgentContract {
	return schemas.AgentContract{
		Name:       Name,
		Version:    "1.0.0",
		Capability: schemas.CapOrganization,
		Description: "Organizes categorised files into folders named after their categories (stored as each file's folder metadata); " +
			"idempotent: files already in the right folder are left alone.",
		Inputs: []schemas.TypedInput{{
			Name: "categories", DataType: schemas.TypeCategorization, Required: true,
			Description: "file IDs grouped by category; each category becomes a folder",
		}},
		Outputs: []schemas.TypedOutput{{
			Name: "folders", DataType: schemas.TypeFolderResult,
			Description: "which files are in which folder, and how many were moved",
		}},
		Params:    json.RawMessage(paramsSchema),
		TimeoutMS: 120_000,
	}
}

// paramsSchema: require_approval asks a person before anything moves (the
// task answers approval_required with the plan, and a pipeline step waits
// for `agentmesh approve`); approved is what the pipeline sets when it
// sends the task again after the approval.
const paramsSchema = `{
  "type": "object",
  "properties": {
    "require_approval": {"type": "boolean", "description": "ask for approval (code approval_required, with the plan) before moving or creating folders"},
    "approved": {"type": "boolean", "description": "a person approved the plan: go ahead"}
  }
}`

// Execute sets each file's folder to its category. A file listed under
// several categories goes to the first by name. With the param
// require_approval (and not approved) it only answers approval_required
// with what it would move, unless nothing would. Files that do not exist are
// skipped and named in the summary; a category that cannot be a folder name
// (a path separator, "..", control characters, too long) fails the task
// before anything is changed.
func (a *Agent) Execute(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
	t := fileagent.Start(a.Contract())
	var c schemas.Categorization
	if err := t.Decode(ec, "categories", &c); err != nil {
		return t.Abort(err)
	}
	names := make([]string, 0, len(c.Categories))
	var bad []error
	for name := range c.Categories {
		if err := CheckFolderName(name); err != nil {
			bad = append(bad, err)
		}
		names = append(names, name)
	}
	if len(bad) > 0 {
		return t.Fail(schemas.CodeInvalidInput, "%v", errors.Join(bad...))
	}
	slices.Sort(names)
	if ec.Params()["require_approval"] == true && ec.Params()["approved"] != true {
		if res, ask := a.plan(ctx, c, names); ask {
			return res, nil
		}
	}

	result := schemas.FolderResult{Folders: map[string][]string{}}
	placed := map[string]string{}
	duplicates := 0
	for _, folder := range names {
		for _, id := range c.Categories[folder] {
			if _, done := placed[id]; done {
				duplicates++
				continue
			}
			moved, err := a.place(ctx, id, folder)
			if err != nil {
				if err := t.SkipError(ctx, id, err); err != nil {
					return t.Abort(err)
				}
				continue
			}
			placed[id] = folder
			result.Folders[folder] = append(result.Folders[folder], id)
			if moved {
				result.Moved++
			}
		}
	}
	if n, _ := t.Skipped(); len(placed) == 0 && n > 0 {
		return t.FailAll(schemas.CodeNotFound, "files could be organised")
	}

	out, err := schemas.NewValue(schemas.TypeFolderResult, result, Name)
	if err != nil {
		return schemas.AgentResult{}, err
	}
	summary := fmt.Sprintf("organised %s into %s", schemas.Plural(len(placed), "file", "files"), schemas.Plural(len(result.Folders), "folder", "folders"))
	if len(result.Folders) > 0 {
		summary += " (" + fileagent.CountList(result.Folders) + ")"
	}
	summary += fmt.Sprintf("; moved %d", result.Moved)
	if duplicates > 0 {
		summary += "; " + schemas.Plural(duplicates, "file", "files") + " listed under several categories went to the first by name"
	}
	return t.Done(summary, map[string]schemas.TypedValue{"folders": out}, schemas.Usage{})
}

// plan answers a task that must be approved first: code
// approval_required, and what it would do as the message. Nothing is
// written. When nothing would move there is nothing to approve: ask is
// false and the task goes on.
func (a *Agent) plan(ctx context.Context, c schemas.Categorization, names []string) (res schemas.AgentResult, ask bool) {
	into := map[string][]string{}
	seen := map[string]bool{}
	stay, missing := 0, 0
	for _, folder := range names {
		for _, id := range c.Categories[folder] {
			if seen[id] {
				continue
			}
			seen[id] = true
			ref, err := a.cat.ResolveMetadata(ctx, id)
			switch {
			case err != nil:
				missing++
			case ref.Metadata[resolvers.MetaFolder] == folder:
				stay++
			default:
				into[folder] = append(into[folder], id)
			}
		}
	}
	moves := 0
	for _, ids := range into {
		moves += len(ids)
	}
	if moves == 0 {
		return schemas.AgentResult{}, false
	}
	msg := fmt.Sprintf("move %s into %s", schemas.Plural(moves, "file", "files"), schemas.Plural(len(into), "folder", "folders"))
	if len(into) > 0 {
		msg += " (" + fileagent.CountList(into) + ")"
	}
	if stay > 0 {
		msg += fmt.Sprintf("; %d already in place", stay)
	}
	if missing > 0 {
		msg += fmt.Sprintf("; %d not found", missing)
	}
	res = schemas.Failure(Name, schemas.CodeApprovalRequired, msg+"?", false)
	res.Summary = "waiting for approval: " + msg
	return res, true
}

// place sets one file's folder, writing only when it differs. It reports
// whether the file moved.
func (a *Agent) place(ctx context.Context, id, folder string) (bool, error) {
	ref, err := a.cat.ResolveMetadata(ctx, id)
	if err != nil {
		return false, err
	}
	if ref.Metadata[resolvers.MetaFolder] == folder {
		return false, nil
	}
	if _, err := a.cat.UpdateMetadata(ctx, id, func(m map[string]string) { m[resolvers.MetaFolder] = folder }); err != nil {
		return false, err
	}
	return true, nil
}

// CheckFolderName accepts a category as a folder name: 1 to MaxFolderName
// bytes of printable characters, no '/', '\\' or NUL, not "." or "..", and no
// leading or trailing space.
func CheckFolderName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: the category name is empty", ErrBadFolderName)
	case len(name) > MaxFolderName:
		return fmt.Errorf("%w: %q is %d bytes long; use at most %d", ErrBadFolderName, name, len(name), MaxFolderName)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q is a relative path; rename the category", ErrBadFolderName, name)
	case strings.ContainsAny(name, `/\`):
		return fmt.Errorf("%w: %q contains a path separator; rename the category without '/' or '\\'", ErrBadFolderName, name)
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("%w: %q starts or ends with space", ErrBadFolderName, name)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("%w: %q contains the control character %U", ErrBadFolderName, name, r)
		}
	}
	return nil
}
