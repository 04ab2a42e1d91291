package docsearch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/agents"
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
	if cat == nil {
		return nil, errors.New("docsearch: New needs a file catalog (the object store resolver)")
	}
	return &Agent{cat: cat}, nil
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

type docCandidate struct {
	ref   schemas.FileRef
	score float64
}

// Execute lists the stored documents, makes sure each has a keyword digest,
// and returns those matching the query, best first.
func (a *Agent) Execute(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
	query := strings.TrimSpace(ec.Param("query"))
	if query == "" {
		query = strings.TrimSpace(ec.Instruction())
	}
	limit, err := LimitParam(ec.Params(), DefaultLimit)
	if err != nil {
		return schemas.Failure(Name, schemas.CodeInvalidParams, err.Error(), false), nil
	}
	var docs []docCandidate
	unreadable := 0
	for ref, err := range a.cat.List(ctx) {
		if err != nil {
			return schemas.Failure(Name, schemas.CodeUnavailable, "listing stored files: "+err.Error(), true), nil
		}
		if DocumentType(ref.MediaType, ref.Filename) == "" {
			continue
		}
		if ref.Metadata[MetaKeywordsVersion] != KeywordsVersion {
			ref = a.digest(ctx, ref)
		}
		if ref.Metadata[MetaExtractError] != "" {
			unreadable++
		}
		docs = append(docs, docCandidate{ref: ref})
	}
	if err := ctx.Err(); err != nil {
		return schemas.AgentResult{}, err
	}

	terms := Terms(query)
	var found []docCandidate
	for _, d := range docs {
		d.score = Score(terms, d.ref)
		if len(terms) == 0 || d.score > 0 {
			found = append(found, d)
		}
	}
	slices.SortStableFunc(found, func(x, y docCandidate) int {
		if c := cmp.Compare(y.score, x.score); c != 0 {
			return c
		}
		return strings.Compare(DisplayName(x.ref), DisplayName(y.ref))
	})
	if len(found) > limit {
		found = found[:limit]
	}
	ids := make([]string, len(found))
	names := make([]string, 0, 5)
	for i, d := range found {
		ids[i] = d.ref.ID
		if i < 5 {
			names = append(names, DisplayName(d.ref))
		}
	}
	fc := schemas.FromIDs(schemas.ContentDocuments, ids...).WithSource(schemas.CapSearch)

	summary := fmt.Sprintf("found %d documents for %q", len(found), query)
	if len(terms) == 0 {
		summary = fmt.Sprintf("found %d documents (the query %q has no search words, so every document is listed)", len(found), query)
	}
	if len(names) > 0 {
		summary += ": " + strings.Join(names, ", ")
		if len(found) > len(names) {
			summary += ", ..."
		}
	}
	if unreadable > 0 {
		summary += fmt.Sprintf("; %d documents could not be read and were matched by name only", unreadable)
	}
	return schemas.AgentResult{
		Success:    true,
		Agent:      Name,
		Capability: schemas.CapSearch,
		Summary:    summary,
		Outputs:    map[string]schemas.TypedValue{"documents": schemas.FilesValue(fc, Name)},
	}, nil
}

// digest extracts a document's text and caches its keyword digest and
// title (or the extraction error) in its metadata. It returns the updated
// reference, or ref with the values filled in when caching failed.
func (a *Agent) digest(ctx context.Context, ref schemas.FileRef) schemas.FileRef {
	update := map[string]string{MetaKeywordsVersion: KeywordsVersion}
	content, err := a.cat.Resolve(ctx, ref.ID)
	var text string
	if err == nil {
		text, err = ExtractText(content, DocumentType(ref.MediaType, ref.Filename))
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
	var other []string
	for k, v := range ref.Metadata {
		switch k {
		case resolvers.MetaFilename, resolvers.MetaMediaType, resolvers.MetaTags, resolvers.MetaFolder,
			MetaKeywords, MetaTitle, MetaKeywordsVersion, MetaExtractError:
		default:
			other = append(other, v)
		}
	}
	fields := []Field{
		{TermSet(ref.Filename, ref.Metadata[resolvers.MetaFilename]), 3},
		{TermSet(ref.Metadata[resolvers.MetaTags]), 3},
		{TermSet(ref.Metadata[MetaTitle]), 2.5},
		{TermSet(ref.Metadata[resolvers.MetaFolder]), 2},
		{TermSet(ref.Metadata[MetaKeywords]), 2},
		{TermSet(other...), 2},
	}
	return ScoreFields(terms, fields)
}

// LimitParam reads the "limit" parameter: a whole number of at least 1,
// def when absent.
func LimitParam(p map[string]any, def int) (int, error) {
	v, ok := p["limit"]
	if !ok || v == nil {
		return def, nil
	}
	var n float64
	switch x := v.(type) {
	case float64:
		n = x
	case int:
		n = float64(x)
	case int64:
		n = float64(x)
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return 0, fmt.Errorf("param limit %q is not a number; give a whole number such as 20", x)
		}
		n = f
	default:
		return 0, fmt.Errorf("param limit %v (%T) is not a number; give a whole number such as 20", v, v)
	}
	if n < 1 || n != math.Trunc(n) {
		return 0, fmt.Errorf("param limit %v must be a whole number of at least 1", v)
	}
	return int(n), nil
}

// DisplayName is a file's filename, else its ID.
func DisplayName(ref schemas.FileRef) string {
	if ref.Filename != "" {
		return ref.Filename
	}
	if n := ref.Metadata[resolvers.MetaFilename]; n != "" {
		return n
	}
	return ref.ID
}

// Field is one place a search term can be found, with the weight a match
// there is worth.
type Field struct {
	Terms  map[string]bool
	Weight float64
}

// ScoreFields rates terms against fields: each term adds the weight of the
// best field it is found in, and matching every term adds one more point per
// term. Zero means no term matched.
func ScoreFields(terms []string, fields []Field) float64 {
	score, matched := 0.0, 0
	for _, t := range terms {
		best := 0.0
		for _, f := range fields {
			if f.Terms[t] {
				best = math.Max(best, f.Weight)
			}
		}
		if best > 0 {
			matched++
		}
		score += best
	}
	if matched == len(terms) {
		score += float64(len(terms))
	}
	return score
}
