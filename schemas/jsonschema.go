package schemas

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
)

// Files holds the JSON Schema documents of every wire shape (json/*.schema.json)
// and of every built-in data type's value (json/types/<TYPE>.schema.json).
// Agents in other languages validate against the same files.
//
//go:embed json
var Files embed.FS

// SchemaBaseURL is the $id prefix of the embedded schema documents.
const SchemaBaseURL = "https://agentmesh.dev/schemas/"

// Names of the wire documents, for ValidateJSON.
const (
	SchemaContract       = "contract"
	SchemaTask           = "task"
	SchemaResult         = "result"
	SchemaTypedValue     = "typed-value"
	SchemaFileCollection = "file-collection"
	SchemaFileRef        = "file-ref"
	SchemaAnnouncement   = "announcement"
	SchemaDeparture      = "departure"
	SchemaRefusal        = "refusal"
	SchemaProgress       = "progress"
	SchemaPipeline       = "pipeline"
	SchemaChatRequest    = "chat-request"
	SchemaChatResponse   = "chat-response"
	SchemaStepEvent      = "step-event"
	SchemaRunEvent       = "run-event"
	SchemaResolve        = "resolve"
	SchemaResolveRefusal = "resolve-refusal"
	SchemaFork           = "fork"
)

// Problem is one reason a document failed its schema: the JSON pointer of
// the offending field ("" for the whole document) and what is wrong with it.
type Problem struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	if p.Field == "" {
		return p.Message
	}
	return p.Field + ": " + p.Message
}

// DocumentError reports every problem of a document that failed its schema.
type DocumentError struct {
	Schema   string
	Problems []Problem
}

func (e *DocumentError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return fmt.Sprintf("%s: %s", e.Schema, strings.Join(parts, "; "))
}

// Unwrap lets errors.Is match ErrInvalidDocument.
func (e *DocumentError) Unwrap() error { return ErrInvalidDocument }

type schemaSet struct {
	once     sync.Once
	err      error
	compiler *compiler
	byName   map[string]*schemaNode
}

var wire schemaSet

// load compiles every embedded document once; custom schemas compiled
// later refer to them through s.compiler.
func (s *schemaSet) load() error {
	s.once.Do(func() {
		c := newCompiler(nil)
		names := []string{}
		s.err = fs.WalkDir(Files, "json", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			raw, err := Files.ReadFile(p)
			if err != nil {
				return err
			}
			doc, err := decodeJSON(raw)
			if err != nil {
				return fmt.Errorf("embedded schema %s: %w", p, err)
			}
			rel := strings.TrimPrefix(p, "json/")
			c.addResource(SchemaBaseURL+rel, doc)
			names = append(names, rel)
			return nil
		})
		if s.err != nil {
			return
		}
		s.byName = make(map[string]*schemaNode, len(names))
		for _, rel := range names {
			sch, err := c.compile(SchemaBaseURL + rel)
			if err == nil {
				err = c.checkCycles()
			}
			if err != nil {
				s.err = fmt.Errorf("compile embedded schema %s: %w", rel, err)
				return
			}
			s.byName[strings.TrimSuffix(rel, ".schema.json")] = sch
			if raw, err := Files.ReadFile("json/" + rel); err == nil {
				if start, ok := typeOnlyStart(raw); ok {
					typeOnly.Store(sch, start)
				}
			}
		}
		s.compiler = c
	})
	return s.err
}

// SchemaNames lists the embedded documents by the name ValidateJSON takes:
// "task", "result", ..., and "types/FILE_IDS" for data types.
func SchemaNames() []string {
	if err := wire.load(); err != nil {
		return nil
	}
	out := make([]string, 0, len(wire.byName))
	for n := range wire.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// SchemaDocument returns the raw JSON Schema document for a name from SchemaNames.
func SchemaDocument(name string) ([]byte, error) {
	return Files.ReadFile(path.Join("json", name+".schema.json"))
}

// ValidateJSON checks doc against the embedded schema called name (see the
// Schema constants). A failure is a *DocumentError listing every problem; it
// matches ErrInvalidDocument with errors.Is.
func ValidateJSON(name string, doc []byte) error {
	if err := wire.load(); err != nil {
		return err
	}
	sch, ok := wire.byName[name]
	if !ok {
		return fmt.Errorf("schemas: no schema named %q (known: %s)", name, strings.Join(SchemaNames(), ", "))
	}
	if probs := check(sch, doc); len(probs) > 0 {
		return &DocumentError{Schema: name, Problems: probs}
	}
	return nil
}

// check validates doc and returns its problems.
func check(sch *schemaNode, doc []byte) []Problem {
	if start, ok := typeOnly.Load(sch); ok && typeOnlyValid(start.(byte), doc) {
		return nil
	}
	inst, err := decodeJSON(doc)
	if err != nil {
		return []Problem{{Message: "not valid JSON: " + err.Error()}}
	}
	return sch.validate(inst)
}

func pointer(loc []string) string {
	if len(loc) == 0 {
		return ""
	}
	return "/" + strings.Join(loc, "/")
}

// compileSchema compiles a caller-supplied schema document (a custom data
// type's value schema, an agent's params schema). It may $ref the embedded
// documents by their absolute URLs.
//
// Compiled schemas are cached by id and content, so validating every task's
// params against its contract does not recompile the schema each time.
func compileSchema(id string, raw []byte) (*schemaNode, error) {
	key := id + "\x00" + string(raw)
	if sch, ok := compiled.Load(key); ok {
		return sch.(*schemaNode), nil
	}
	sch, err := compileSchemaNow(id, raw)
	if err != nil {
		return nil, err
	}
	compiled.Store(key, sch)
	return sch, nil
}

// compiled caches compileSchema's results; schemas are immutable once compiled.
var compiled sync.Map

func compileSchemaNow(id string, raw []byte) (*schemaNode, error) {
	if err := wire.load(); err != nil {
		return nil, err
	}
	doc, err := decodeJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("schema %s is not valid JSON: %w", id, err)
	}
	// The embedded documents are resolvable from custom schemas.
	c := newCompiler(wire.compiler)
	url := "mem://agentmesh/" + id
	c.addResource(url, doc)
	sch, err := c.compile(url)
	if err == nil {
		err = c.checkCycles()
	}
	if err != nil {
		return nil, fmt.Errorf("schema %s does not compile: %w", id, err)
	}
	if start, ok := typeOnlyStart(raw); ok {
		typeOnly.Store(sch, start)
	}
	return sch, nil
}
