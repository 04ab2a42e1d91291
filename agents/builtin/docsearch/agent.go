package docsearch

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/internal/fileagent"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// Name is the agent's name on the mesh.
const Name = "DocumentSearchAgent"

// Metadata keys this agent reads and writes on stored documents.
const (
	// MetaKeywords holds the space-separated keyword digest of the text.
	MetaKeywords = "keywords"
	// MetaTitle holds the first line of the text.
	MetaTitle = "title"
	// MetaKeywordsVersion is the version of the extraction code that wrote
	// the digest; a different version is recomputed.
	MetaKeywordsVersion = "keywords_version"
	// MetaExtractError records why a document's text could not be read.
	MetaExtractError = "extract_error"
	// KeywordsVersion is the current extraction code's version.
	KeywordsVersion = "1"
)

// DefaultLimit is the number of results when the task gives no limit.
const DefaultLimit = 20

// Agent is the DocumentSearchAgent.
type Agent struct {
	cat resolvers.Catalog
}

var _ agents.Agent = (*Agent)(nil)

// New returns a DocumentSearchAgent over the files of cat.
func New(cat resolvers.Catalog) (*Agent, error) {
	return fileagent.New("docsearch", cat, &Agent{cat: cat})
}

// Contract declares SEARCH with params {query, limit} and the found
// documents as output.
func (a *Agent) Contract() schemas.AgentContract {
	return schemas.AgentContract{
		Name:       Name,
		Version:    "1.0.0",
		Capability: schemas.CapSearch,
		Description: "Finds stored documents (plain text, Markdown, HTML, PDF) matching a query by filename, tags, " +
			"title and the keywords of their text, ranked best first.",
		Outputs: []schemas.TypedOutput{{
			Name: "documents", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentDocuments, Mergeable: true,
			Description: "the matching documents, best match first",
		}},
		Params: json.RawMessage(`{"type":"object","properties":{` +
			`"query":{"type":"string","description":"what to look for, e.g. \"jetstream\"; empty lists every document"},` +
			`"limit":{"type":"integer","minimum":1,"maximum":10000,"description":"most documents to return (default 20)"}}}`),
		CanChainWith: []string{"SummarizeAgent"},
		TimeoutMS:    120_000,
	}
}

// Execute lists the stored documents, makes sure each has a keyword digest,
// and returns those matching the query, best first.
func (a *Agent) Execute(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
	t := fileagent.Start(a.Contract())
	s, err := t.Search(ec, DefaultLimit)
	if err != nil {
		return t.Abort(err)
	}
	files, err := fileagent.Files(ctx, a.cat, func(ref schemas.FileRef) bool {
		return fileagent.DocumentType(ref.MediaType, ref.Filename) != ""
	})
	if err != nil {
		return t.Abort(err)
	}
	hits := make([]fileagent.Hit, len(files))
	unreadable := 0
	for i, f := range files {
		ref, w := f.Ref, fileagent.TermWeights(nil)
		if ref.Metadata[MetaKeywordsVersion] != KeywordsVersion {
			ref = a.digest(ctx, ref)
			w = Weights(ref)
		} else if len(s.Terms) > 0 {
			w = resolvers.Derive(f, weightsKey{}, Weights)
		}
		if ref.Metadata[MetaExtractError] != "" {
			unreadable++
		}
		hits[i] = fileagent.Hit{Ref: ref}
		if len(s.Terms) > 0 {
			hits[i].Score = w.Score(s.Terms)
		}
	}
	if err := ctx.Err(); err != nil {
		return t.Abort(err)
	}

	summary, outputs := t.Found(s, s.Rank(hits))
	if unreadable > 0 {
		summary += "; " + schemas.Plural(unreadable, "document", "documents") + " could not be read and were matched by name only"
	}
	return t.Done(summary, outputs, schemas.Usage{})
}

// digest extracts a document's text and caches its keyword digest and
// title (or the extraction error) in its metadata. It returns the updated
// reference, or ref with the values filled in when caching failed.
func (a *Agent) digest(ctx context.Context, ref schemas.FileRef) schemas.FileRef {
	update := map[string]string{MetaKeywordsVersion: KeywordsVersion}
	content, err := a.cat.Resolve(ctx, ref.ID)
	var text string
	if err == nil {
		text, err = fileagent.ExtractText(content, fileagent.DocumentType(ref.MediaType, ref.Filename))
	}
	if err != nil {
		update[MetaExtractError] = err.Error()
	} else {
		update[MetaKeywords] = strings.Join(Digest(text), " ")
		update[MetaTitle] = Title(text)
	}
	updated, uerr := a.cat.UpdateMetadata(ctx, ref.ID, func(m map[string]string) {
		delete(m, MetaExtractError)
		delete(m, MetaKeywords)
		delete(m, MetaTitle)
		for k, v := range update {
			m[k] = v
		}
	})
	if uerr == nil {
		return updated
	}
	meta := make(map[string]string, len(ref.Metadata)+len(update))
	for k, v := range ref.Metadata {
		meta[k] = v
	}
	for k, v := range update {
		meta[k] = v
	}
	ref.Metadata = meta
	return ref
}

// Score rates how well a document matches the query terms: each term adds
// the weight of the best place it is found in (filename or tags 3, title
// 2.5, folder, keywords or other metadata 2), and a document matching every
// term gets one more point per term. Zero means no term matched.
func Score(terms []string, ref schemas.FileRef) float64 {
	if len(terms) == 0 {
		return 0
	}
	return Weights(ref).Score(terms)
}

// weightsKey keys the term weights Derive keeps for an indexed document.
type weightsKey struct{}

// Weights are a document's search terms weighted as Score weighs them.
func Weights(ref schemas.FileRef) fileagent.TermWeights {
	var other []string
	for k, v := range ref.Metadata {
		switch k {
		case resolvers.MetaFilename, resolvers.MetaMediaType, resolvers.MetaTags, resolvers.MetaFolder,
			MetaKeywords, MetaTitle, MetaKeywordsVersion, MetaExtractError:
		default:
			other = append(other, v)
		}
	}
	fields := []fileagent.Field{
		{Terms: fileagent.TermSet(ref.Filename, ref.Metadata[resolvers.MetaFilename]), Weight: 3},
		{Terms: fileagent.TermSet(ref.Metadata[resolvers.MetaTags]), Weight: 3},
		{Terms: fileagent.TermSet(ref.Metadata[MetaTitle]), Weight: 2.5},
		{Terms: fileagent.TermSet(ref.Metadata[resolvers.MetaFolder]), Weight: 2},
		{Terms: fileagent.TermSet(ref.Metadata[MetaKeywords]), Weight: 2},
		{Terms: fileagent.TermSet(other...), Weight: 2},
	}
	return fileagent.Weigh(fields)
}
