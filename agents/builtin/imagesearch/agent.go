package imagesearch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/docsearch"
	"github.com/agentmesh/agentmesh/agents/builtin/imagefeat"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// Name is the agent's name on the mesh.
const Name = "ImageSearchAgent"

// Metadata keys this agent reads and writes on stored images.
const (
	// MetaVisual holds the space-separated visual words of an image.
	MetaVisual = "visual"
	// MetaVisualVersion is the version of the feature code that wrote
	// MetaVisual; a different version is recomputed.
	MetaVisualVersion = "visual_version"
	// MetaVisualError records why an image's pixels could not be read, so
	// that a broken file is not decoded again on every search.
	MetaVisualError = "visual_error"
	// VisualVersion is the current feature code's version.
	VisualVersion = "1"
)

// DefaultLimit is the number of results when the task gives no limit.
const DefaultLimit = 50

// Field weights: how much one query term counts when found in each place.
const (
	weightFilename = 3.0
	weightTags     = 3.0
	weightFolder   = 2.0
	weightMetadata = 2.0
	weightVisual   = 1.5
)

// Option configures the agent.
type Option func(*Agent)

// WithConcurrency sets how many images are decoded at once when computing
// visual words (default: the number of CPUs, at most 4).
func WithConcurrency(n int) Option {
	return func(a *Agent) {
		if n > 0 {
			a.workers = n
		}
	}
}

// Agent is the ImageSearchAgent.
type Agent struct {
	cat     resolvers.Catalog
	workers int
}

var _ agents.Agent = (*Agent)(nil)

// New returns an ImageSearchAgent over the files of cat. Options:
// WithConcurrency.
func New(cat resolvers.Catalog, opts ...Option) (*Agent, error) {
	if cat == nil {
		return nil, errors.New("imagesearch: New needs a file catalog (the object store resolver)")
	}
	a := &Agent{cat: cat, workers: min(runtime.NumCPU(), 4)}
	for _, o := range opts {
		o(a)
	}
	return a, nil
}

// Contract declares SEARCH with params {query, limit}, an optional scope of
// images to search within, and the found images as output.
func (a *Agent) Contract() schemas.AgentContract {
	return schemas.AgentContract{
		Name:       Name,
		Version:    "1.0.0",
		Capability: schemas.CapSearch,
		Description: "Finds stored images matching a query by filename, tags, folder and metadata, " +
			"and by what the pixels show (sunset, forest, sea, night, snow, warm, dark, colourful...), ranked best first.",
		Inputs: []schemas.TypedInput{{
			Name: "scope", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentImages,
			Description: "search only within these images (default: every stored image)",
		}},
		Outputs: []schemas.TypedOutput{{
			Name: "images", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentImages, Mergeable: true,
			Description: "the matching images, best match first",
		}},
		Params: json.RawMessage(`{"type":"object","properties":{` +
			`"query":{"type":"string","description":"what to look for, e.g. \"sunset\" or \"snowy forest\"; empty lists every image"},` +
			`"limit":{"type":"integer","minimum":1,"maximum":10000,"description":"most images to return (default 50)"}}}`),
		CanChainWith: []string{"AnalysisAgent", "FolderAgent"},
		TimeoutMS:    120_000,
	}
}

// candidate is one image being scored.
type candidate struct {
	ref    schemas.FileRef
	visual string
	score  float64
}

// Execute lists the images (or the scope), makes sure each has visual
// words, scores them against the query and returns the best.
func (a *Agent) Execute(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
	query := strings.TrimSpace(ec.Param("query"))
	if query == "" {
		query = strings.TrimSpace(ec.Instruction())
	}
	limit, err := docsearch.LimitParam(ec.Params(), DefaultLimit)
	if err != nil {
		return schemas.Failure(Name, schemas.CodeInvalidParams, err.Error(), false), nil
	}

	refs, skipped, failure := a.images(ctx, ec)
	if failure != nil {
		return *failure, nil
	}
	if err := ctx.Err(); err != nil {
		return schemas.AgentResult{}, err
	}
	undecodable := a.ensureVisual(ctx, refs)

	terms := docsearch.Terms(query)
	var found []candidate
	for _, c := range refs {
		c.score = Score(terms, c.ref, c.visual)
		if len(terms) == 0 || c.score > 0 {
			found = append(found, c)
		}
	}
	slices.SortStableFunc(found, func(x, y candidate) int {
		if x.score != y.score {
			return cmp.Compare(y.score, x.score)
		}
		return strings.Compare(docsearch.DisplayName(x.ref), docsearch.DisplayName(y.ref))
	})
	if len(found) > limit {
		found = found[:limit]
	}
	ids := make([]string, len(found))
	for i, c := range found {
		ids[i] = c.ref.ID
	}
	fc := schemas.FromIDs(schemas.ContentImages, ids...).WithSource(schemas.CapSearch)

	var summary strings.Builder
	switch {
	case len(terms) == 0:
		fmt.Fprintf(&summary, "found %d images (the query %q has no search words, so every image is listed)", len(found), query)
	default:
		fmt.Fprintf(&summary, "found %d images for %q", len(found), query)
	}
	if len(found) > 0 {
		names := make([]string, 0, 5)
		for _, c := range found[:min(5, len(found))] {
			names = append(names, docsearch.DisplayName(c.ref))
		}
		more := ""
		if len(found) > 5 {
			more = ", ..."
		}
		fmt.Fprintf(&summary, ": %s%s", strings.Join(names, ", "), more)
	}
	if undecodable > 0 {
		fmt.Fprintf(&summary, "; %d images could not be decoded and were matched by name only", undecodable)
	}
	if len(skipped) > 0 {
		fmt.Fprintf(&summary, "; skipped %d scope ids: %s", len(skipped), strings.Join(skipped, "; "))
	}
	return schemas.AgentResult{
		Success:    true,
		Agent:      Name,
		Capability: schemas.CapSearch,
		Summary:    summary.String(),
		Outputs:    map[string]schemas.TypedValue{"images": schemas.FilesValue(fc, Name)},
	}, nil
}

// images returns the images to search: the scope's, else every stored
// image. Scope IDs that do not resolve or are not images are skipped and
// described.
func (a *Agent) images(ctx context.Context, ec *schemas.ExecutionContext) ([]candidate, []string, *schemas.AgentResult) {
	var out []candidate
	if ec.Has("scope") {
		scope, err := ec.Files("scope")
		if err != nil {
			f := schemas.Failure(Name, schemas.CodeInvalidInput, "input \"scope\": "+err.Error(), false)
			return nil, nil, &f
		}
		if scope.Spilled() {
			f := schemas.Failure(Name, schemas.CodeInvalidInput, fmt.Sprintf("input \"scope\" is a spilled collection (%s); the runtime resolves those before Execute", scope.Ref()), false)
			return nil, nil, &f
		}
		var skipped []string
		for _, id := range scope.IDs() {
			ref, err := a.cat.ResolveMetadata(ctx, id)
			switch {
			case err != nil:
				skipped = append(skipped, fmt.Sprintf("%q: %v", id, err))
			case !isImage(ref):
				skipped = append(skipped, fmt.Sprintf("%q is %s, not an image", id, mediaTypeOf(ref)))
			default:
				out = append(out, candidate{ref: ref})
			}
		}
		if len(out) == 0 && len(skipped) > 0 {
			f := schemas.Failure(Name, schemas.CodeNotFound, "no image of the scope could be read: "+strings.Join(skipped, "; "), false)
			return nil, nil, &f
		}
		return out, skipped, nil
	}
	for ref, err := range a.cat.List(ctx) {
		if err != nil {
			f := schemas.Failure(Name, schemas.CodeUnavailable, "listing stored files: "+err.Error(), true)
			return nil, nil, &f
		}
		if isImage(ref) {
			out = append(out, candidate{ref: ref})
		}
	}
	return out, nil, nil
}

// ensureVisual fills in every candidate's visual words, computing and
// caching those not yet in its metadata. It returns how many images could
// not be decoded.
func (a *Agent) ensureVisual(ctx context.Context, cands []candidate) int {
	var todo []int
	for i := range cands {
		m := cands[i].ref.Metadata
		if m[MetaVisualVersion] == VisualVersion {
			cands[i].visual = m[MetaVisual]
			continue
		}
		todo = append(todo, i)
	}
	var (
		wg          sync.WaitGroup
		mu          sync.Mutex
		undecodable int
		next        = make(chan int)
	)
	for range min(a.workers, len(todo)) {
		wg.Go(func() {
			for i := range next {
				words, err := a.computeVisual(ctx, cands[i].ref.ID)
				if err != nil {
					mu.Lock()
					undecodable++
					mu.Unlock()
					continue
				}
				cands[i].visual = words
			}
		})
	}
	for _, i := range todo {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	for _, c := range cands {
		if c.ref.Metadata[MetaVisualError] != "" && c.ref.Metadata[MetaVisualVersion] == VisualVersion {
			undecodable++
		}
	}
	return undecodable
}

// computeVisual decodes one image, computes its visual words and caches them
// (or the decoding error) in the file's metadata. A failure to cache is not
// an error: the words are still used for this search.
func (a *Agent) computeVisual(ctx context.Context, id string) (string, error) {
	content, err := a.cat.Resolve(ctx, id)
	if err != nil {
		return "", err
	}
	words, decodeErr := VisualWords(content)
	_, _ = a.cat.UpdateMetadata(ctx, id, func(m map[string]string) {
		m[MetaVisualVersion] = VisualVersion
		if decodeErr != nil {
			m[MetaVisualError] = decodeErr.Error()
			delete(m, MetaVisual)
			return
		}
		m[MetaVisual] = words
		delete(m, MetaVisualError)
	})
	return words, decodeErr
}

// VisualWords decodes an image and returns its visual words joined by
// spaces, as cached under MetaVisual.
func VisualWords(content []byte) (string, error) {
	img, _, err := imagefeat.Decode(content)
	if err != nil {
		return "", err
	}
	return imagefeat.Extract(img).WordString(), nil
}

// Score rates how well an image matches the query terms: each term adds the
// weight of the best place it is found in (filename or tags 3, folder or
// other metadata 2, visual words 1.5), and an image matching every term gets
// a bonus of one more point per term. Zero means no term matched.
func Score(terms []string, ref schemas.FileRef, visual string) float64 {
	if len(terms) == 0 {
		return 0
	}
	var other []string
	for k, v := range ref.Metadata {
		switch k {
		case resolvers.MetaFilename, resolvers.MetaMediaType, resolvers.MetaTags, resolvers.MetaFolder, MetaVisual, MetaVisualVersion, MetaVisualError:
		default:
			other = append(other, v)
		}
	}
	fields := []docsearch.Field{
		{Terms: docsearch.TermSet(ref.Filename, ref.Metadata[resolvers.MetaFilename]), Weight: weightFilename},
		{Terms: docsearch.TermSet(ref.Metadata[resolvers.MetaTags]), Weight: weightTags},
		{Terms: docsearch.TermSet(ref.Metadata[resolvers.MetaFolder]), Weight: weightFolder},
		{Terms: docsearch.TermSet(other...), Weight: weightMetadata},
		{Terms: docsearch.TermSet(visual), Weight: weightVisual},
	}
	return docsearch.ScoreFields(terms, fields)
}

func isImage(ref schemas.FileRef) bool {
	return strings.HasPrefix(strings.ToLower(ref.MediaType), "image/")
}

func mediaTypeOf(ref schemas.FileRef) string {
	if ref.MediaType == "" {
		return "of unknown type"
	}
	return ref.MediaType
}
