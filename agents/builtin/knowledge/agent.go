package knowledge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/internal/fileagent"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// Name is the agent's name on the mesh.
const Name = "KnowledgeAgent"

// Top-k bounds: DefaultTopK chunks when the task gives no top_k, at most
// MaxTopK.
const (
	DefaultTopK = 5
	MaxTopK     = 100
)

// Option configures the agent.
type Option = fileagent.Option[Agent]

// WithEmbedder turns on dense retrieval: chunks and queries are embedded
// by e, the model called model (the name is part of each stored index, so
// that another model builds its own vectors).
func WithEmbedder(e Embedder, model string) Option {
	return func(a *Agent) { a.ix.embedder, a.ix.model = e, model }
}

// WithChunking sets the chunk size and overlap (default DefaultChunkChars
// and DefaultOverlapChars).
func WithChunking(o ChunkOptions) Option {
	return func(a *Agent) { a.ix.chunking = o.normalized() }
}

// Agent is the KnowledgeAgent.
type Agent struct {
	ix *Index
}

var _ agents.Agent = (*Agent)(nil)

// New returns a KnowledgeAgent over the documents of cat, keeping its
// knowledge bases and indexes in obs, the object store cat reads (the
// mesh's file store). Options: WithEmbedder, WithChunking.
func New(cat resolvers.Catalog, obs jetstream.ObjectStore, opts ...Option) (*Agent, error) {
	if obs == nil {
		return nil, fmt.Errorf("knowledge: New needs the mesh's file store (a jetstream.ObjectStore) to keep its indexes in")
	}
	ix := &Index{cat: cat, store: NewStore(obs), chunking: ChunkOptions{}.normalized(), cache: map[string]*entry{}}
	return fileagent.New("knowledge", cat, &Agent{ix: ix}, opts...)
}

// Index is the agent's index, for reading what it built.
func (a *Agent) Index() *Index { return a.ix }

const paramsSchema = `{"type":"object","properties":{` +
	`"kb":{"type":"string","description":"the knowledge base to search (agentmesh kb ls); empty searches every stored document"},` +
	`"top_k":{"type":"integer","minimum":1,"maximum":100,"description":"how many passages to return (default 5)"},` +
	`"filters":{"type":"object","additionalProperties":{"type":"string"},` +
	`"description":"document metadata that must match: tags (holds the tag), filename (a glob such as *.md), or any other metadata key (equals)"},` +
	`"mode":{"type":"string","enum":["lexical","dense","fused"],` +
	`"description":"lexical (BM25), dense (embeddings) or fused (both); default fused when an embedding model is configured, else lexical"}}}`

// Contract declares SEARCH: a query and optional documents in, the
// passages that answer it out.
func (a *Agent) Contract() schemas.AgentContract {
	return schemas.AgentContract{
		Name:       Name,
		Version:    "1.0.0",
		Capability: schemas.CapSearch,
		Description: "Searches a knowledge base (a named set of stored documents: text, Markdown, HTML, PDF) for the passages " +
			"that answer a question, best first, to answer from: policies, manuals, notes.",
		Inputs: []schemas.TypedInput{
			{Name: "query", DataType: schemas.TypeText, Required: true, Description: "the question or words to look for"},
			{Name: "file_ids", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentDocuments,
				Description: "search only these documents of the knowledge base"},
		},
		Outputs: []schemas.TypedOutput{{
			Name: "chunks", DataType: schemas.TypeChunks, Mergeable: true,
			Description: "the passages found, best first, each with its document and position",
		}},
		Params:       json.RawMessage(paramsSchema),
		CanChainWith: []string{"SummarizeAgent"},
		TimeoutMS:    120_000,
	}
}

// Execute searches the knowledge base the params name for the query.
func (a *Agent) Execute(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
	t := fileagent.Start(a.Contract())
	q, err := a.query(t, ec)
	if err != nil {
		return t.Abort(err)
	}
	found, err := a.ix.Search(ctx, q)
	if err != nil {
		return t.Abort(err)
	}
	for _, why := range found.Skipped {
		t.Skip("%s", why)
	}
	where := "every stored document"
	if q.Base != "" {
		where = fmt.Sprintf("knowledge base %q", q.Base)
	}
	if found.Searched == 0 {
		if n, why := t.Skipped(); n > 0 {
			return t.Fail(schemas.CodeNotFound, "no document of %s could be searched: %s", where, why)
		}
		return t.Fail(schemas.CodeNotFound, "%s holds no document to search: add some with agentmesh kb add", where)
	}
	value, err := schemas.NewValue(schemas.TypeChunks, found.Chunks, Name)
	if err != nil {
		return t.Abort(err)
	}
	searched := schemas.Plural(found.Searched, "stored document", "stored documents")
	if q.Base != "" {
		searched = schemas.Plural(found.Searched, "document", "documents") + " of " + where
	}
	summary := fmt.Sprintf("found %s in %s", schemas.Plural(len(found.Chunks), "passage", "passages"), searched)
	return t.Done(summary, map[string]schemas.TypedValue{"chunks": value}, found.Usage)
}

// query reads the task's query, documents and params.
func (a *Agent) query(t *fileagent.Task, ec *schemas.ExecutionContext) (Query, error) {
	var q Query
	if err := t.Decode(ec, "query", &q.Text); err != nil {
		return q, err
	}
	if strings.TrimSpace(q.Text) == "" {
		return q, fileagent.Failf(schemas.CodeInvalidInput, "input \"query\" is empty: give the question to search for")
	}
	if ec.Has("file_ids") {
		ids, err := t.Files(ec, "file_ids")
		if err != nil {
			return q, err
		}
		q.FileIDs = ids
	}
	var err error
	if q.TopK, err = t.IntParam(ec, "top_k", DefaultTopK); err != nil {
		return q, err
	}
	if q.TopK > MaxTopK {
		return q, fileagent.Failf(schemas.CodeInvalidParams, "param top_k %d is more than %d: ask for fewer passages", q.TopK, MaxTopK)
	}
	params := ec.Params()
	if v, ok := params["kb"]; ok && v != nil {
		s, isString := v.(string)
		if !isString {
			return q, fileagent.Failf(schemas.CodeInvalidParams, "param kb %v (%T) is not a name; give a knowledge base name such as \"policies\"", v, v)
		}
		if s != "" {
			if err := CheckName(s); err != nil {
				return q, fileagent.Failf(schemas.CodeInvalidParams, "param kb: %v", err)
			}
		}
		q.Base = s
	}
	if v, ok := params["mode"]; ok && v != nil {
		s, _ := v.(string)
		switch s {
		case ModeLexical, ModeDense, ModeFused:
			q.Mode = s
		default:
			return q, fileagent.Failf(schemas.CodeInvalidParams, "param mode %v is unknown: use lexical, dense or fused", v)
		}
	}
	if v, ok := params["filters"]; ok && v != nil {
		m, isMap := v.(map[string]any)
		if !isMap {
			return q, fileagent.Failf(schemas.CodeInvalidParams, "param filters %v (%T) is not an object; give one such as {\"tags\": \"policy\"}", v, v)
		}
		q.Filters = make(map[string]string, len(m))
		for k, x := range m {
			s, isString := x.(string)
			if !isString {
				return q, fileagent.Failf(schemas.CodeInvalidParams, "param filters: %s is %v (%T); give a string", k, x, x)
			}
			q.Filters[k] = s
		}
	}
	return q, nil
}
