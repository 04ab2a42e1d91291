package imagesearch

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"sync"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/imagefeat"
	"github.com/agentmesh/agentmesh/agents/builtin/internal/fileagent"
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
type Option = fileagent.Option[Agent]

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
	return fileagent.New("imagesearch", cat, &Agent{cat: cat, workers: min(runtime.NumCPU(), 4)}, opts...)
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

// candidate is one image to score, with its visual words, and the file as
// the index holds it when it came from the index.
type candidate struct {
	ref    schemas.FileRef
	visual string
	file   *resolvers.IndexedFile
}

// weightsKey keys the term weights Derive keeps for an indexed image.
type weightsKey struct{}

// weights are the candidate's term weights: kept in the index entry when
// its visual words are the ones cached in its metadata, else built now.
func (c candidate) weights() fileagent.TermWeights {
	if c.file != nil && c.visual == c.ref.Metadata[MetaVisual] {
		return resolvers.Derive(c.file, weightsKey{}, func(ref schemas.FileRef) fileagent.TermWeights {
			return Weights(ref, ref.Metadata[MetaVisual])
		})
	}
	return Weights(c.ref, c.visual)
}

// Execute lists the images (or the scope), makes sure each has visual
// words, scores them against the query and returns the best.
func (a *Agent) Execute(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
	t := fileagent.Start(a.Contract())
	t.Skipping = "scope ids"
	s, err := t.Search(ec, DefaultLimit)
	if err != nil {
		return t.Abort(err)
	}
	cands, err := a.images(ctx, t, ec)
	if err != nil {
		return t.Abort(err)
	}
	if err := ctx.Err(); err != nil {
		return t.Abort(err)
	}
	undecodable := a.ensureVisual(ctx, cands)

	hits := make([]fileagent.Hit, len(cands))
	for i, c := range cands {
		if len(s.Terms) > 0 {
			hits[i] = fileagent.Hit{Ref: c.ref, Score: c.weights().Score(s.Terms)}
		} else {
			hits[i] = fileagent.Hit{Ref: c.ref}
		}
	}
	summary, outputs := t.Found(s, s.Rank(hits))
	if undecodable > 0 {
		summary += "; " + schemas.Plural(undecodable, "image", "images") + " could not be decoded and were matched by name only"
	}
	return t.Done(summary, outputs, schemas.Usage{})
}

// images returns the images to search: the scope's, else every stored
// image. Scope IDs that do not resolve or are not images are skipped.
func (a *Agent) images(ctx context.Context, t *fileagent.Task, ec *schemas.ExecutionContext) ([]candidate, error) {
	var out []candidate
	if !ec.Has("scope") {
		files, err := fileagent.Files(ctx, a.cat, isImage)
		if err != nil {
			return nil, err
		}
		out = make([]candidate, len(files))
		for i, f := range files {
			out[i] = candidate{ref: f.Ref, file: f}
		}
		return out, nil
	}
	ids, err := t.Files(ec, "scope")
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		ref, err := a.cat.ResolveMetadata(ctx, id)
		switch {
		case err != nil:
			t.Skip("%q: %v", id, err)
		case !isImage(ref):
			t.Skip("%q is %s, not an image", id, fileagent.MediaTypeOf(ref))
		default:
			out = append(out, candidate{ref: ref})
		}
	}
	if n, why := t.Skipped(); len(out) == 0 && n > 0 {
		return nil, fileagent.Failf(schemas.CodeNotFound, "no image of the scope could be read: %s", why)
	}
	return out, nil
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
	return Weights(ref, visual).Score(terms)
}

// Weights are an image's search terms weighted as Score weighs them.
func Weights(ref schemas.FileRef, visual string) fileagent.TermWeights {
	var other []string
	for k, v := range ref.Metadata {
		switch k {
		case resolvers.MetaFilename, resolvers.MetaMediaType, resolvers.MetaTags, resolvers.MetaFolder, MetaVisual, MetaVisualVersion, MetaVisualError:
		default:
			other = append(other, v)
		}
	}
	fields := []fileagent.Field{
		{Terms: fileagent.TermSet(ref.Filename, ref.Metadata[resolvers.MetaFilename]), Weight: weightFilename},
		{Terms: fileagent.TermSet(ref.Metadata[resolvers.MetaTags]), Weight: weightTags},
		{Terms: fileagent.TermSet(ref.Metadata[resolvers.MetaFolder]), Weight: weightFolder},
		{Terms: fileagent.TermSet(other...), Weight: weightMetadata},
		{Terms: fileagent.TermSet(visual), Weight: weightVisual},
	}
	return fileagent.Weigh(fields)
}

func isImage(ref schemas.FileRef) bool {
	return strings.HasPrefix(strings.ToLower(ref.MediaType), "image/")
}
