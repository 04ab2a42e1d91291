package imagesearch

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"sync"
	"time"

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

// candidate is one image to score: its reference (shared with the index
// when it came from there: read only), what is known of it, and the
// visual words computed for this task when it had none.
type candidate struct {
	ref   *schemas.FileRef
	known known
	// fresh is set when this task computed the visual words (visual).
	fresh  bool
	visual string
}

// known is what a search needs of an image's reference, derived once per
// version of an indexed image (resolvers.Derive) and kept in its index
// entry: whether its visual words are current, whether its pixels could
// not be read, and its weighed search terms.
type known struct {
	visualDone, undecodable bool
	weights                 fileagent.TermWeights
}

// knownKey keys known in the index entries.
type knownKey struct{}

func knownOf(ref schemas.FileRef) known {
	m := ref.Metadata
	done := m[MetaVisualVersion] == VisualVersion
	visual := "" // words of another feature version are not used
	if done {
		visual = m[MetaVisual]
	}
	return known{visualDone: done, undecodable: done && m[MetaVisualError] != "", weights: Weights(ref, visual)}
}

// score is the candidate's score for terms.
func (c *candidate) score(terms []string) float64 {
	if c.fresh {
		return Weights(*c.ref, c.visual).Score(terms)
	}
	return c.known.weights.Score(terms)
}

// Execute lists the images (or the scope), makes sure each has visual
// words, scores them against the query and returns the best.
// catchUpWait bounds how long a search that found nothing waits for the
// store's own list (see resolvers.CatchUp).
const catchUpWait = 2 * time.Second

func (a *Agent) Execute(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
	t := fileagent.Start(a.Contract())
	t.Skipping = "scope ids"
	s, err := t.Search(ec, DefaultLimit)
	if err != nil {
		return t.Abort(err)
	}
	var ix *searchIndex
	for again := true; !ec.Has("scope"); again = false {
		set, err := fileagent.Snapshot(ctx, a.cat)
		if err != nil {
			return t.Abort(err)
		}
		ix = resolvers.DeriveSet(set, indexKey{}, buildIndex)
		found, ok := ix.search(s)
		if ok && len(found) == 0 && again {
			// Nothing in the watched index: files stored a moment ago by
			// another process may not be in it yet; ask the store once,
			// briefly (a store that does not answer leaves the answer as
			// the index gives it).
			cctx, cancel := context.WithTimeout(ctx, catchUpWait)
			err := resolvers.CatchUp(cctx, a.cat)
			cancel()
			if err == nil {
				continue
			}
		}
		if ok {
			return a.found(t, s, found, ix.undecodable)
		}
		break
	}
	cands, err := a.images(ctx, t, ec, ix)
	if err != nil {
		return t.Abort(err)
	}
	if err := ctx.Err(); err != nil {
		return t.Abort(err)
	}
	undecodable := a.ensureVisual(ctx, cands)

	var hits []fileagent.Hit
	for i := range cands {
		c := &cands[i]
		if len(s.Terms) == 0 {
			hits = append(hits, fileagent.Hit{Ref: *c.ref})
		} else if score := c.score(s.Terms); score > 0 {
			hits = append(hits, fileagent.Hit{Ref: *c.ref, Score: score})
		}
	}
	return a.found(t, s, s.Rank(hits), undecodable)
}

// found is the task's result: the ranked hits, noting the images that
// could only be matched by name.
func (a *Agent) found(t *fileagent.Task, s fileagent.Search, found []fileagent.Hit, undecodable int) (schemas.AgentResult, error) {
	summary, outputs := t.Found(s, found)
	if undecodable > 0 {
		summary += "; " + schemas.Plural(undecodable, "image", "images") + " could not be decoded and were matched by name only"
	}
	return t.Done(summary, outputs, schemas.Usage{})
}

// images returns the images to search: the scope's, else every stored
// image (those of ix). Scope IDs that do not resolve or are not images are
// skipped.
func (a *Agent) images(ctx context.Context, t *fileagent.Task, ec *schemas.ExecutionContext, ix *searchIndex) ([]candidate, error) {
	if ix != nil {
		return ix.candidates(), nil
	}
	var out []candidate
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
			out = append(out, candidate{ref: &ref, known: knownOf(ref)})
		}
	}
	if n, why := t.Skipped(); len(out) == 0 && n > 0 {
		return nil, fileagent.Failf(schemas.CodeNotFound, "no image of the scope could be read: %s", why)
	}
	return out, nil
}

// ensureVisual computes the visual words of every candidate without
// current ones (caching them in its metadata). It returns how many images
// could not be decoded, now or before.
func (a *Agent) ensureVisual(ctx context.Context, cands []candidate) int {
	var todo []int
	undecodable := 0
	for i := range cands {
		switch {
		case !cands[i].known.visualDone:
			todo = append(todo, i)
		case cands[i].known.undecodable:
			undecodable++
		}
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		next = make(chan int)
	)
	for range min(a.workers, len(todo)) {
		wg.Go(func() {
			for i := range next {
				words, err := a.computeVisual(ctx, cands[i].ref.ID)
				cands[i].fresh, cands[i].visual = true, words
				if err != nil {
					mu.Lock()
					undecodable++
					mu.Unlock()
				}
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
