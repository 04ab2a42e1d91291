package analysis

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/imagefeat"
	"github.com/agentmesh/agentmesh/agents/builtin/internal/fileagent"
	"github.com/agentmesh/agentmesh/agents/builtin/llmiface"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// Name is the agent's name on the mesh.
const Name = "AnalysisAgent"

// Methods named in the results.
const (
	MethodFeatures = "features" // pixel features and the imagefeat rule set
	MethodVision   = "vision"   // the configured vision model
	MethodMixed    = "vision+features"
)

// Option configures the agent.
type Option = fileagent.Option[Agent]

// WithVisionModel makes the agent ask m for each image's labels and caption,
// the first label naming its category. An image the model fails on is
// categorised by its features. A nil m keeps the features method.
func WithVisionModel(m llmiface.VisionModel) Option {
	return func(a *Agent) { a.vision = m }
}

// Agent is the AnalysisAgent.
type Agent struct {
	files  resolvers.FileResolver
	vision llmiface.VisionModel
}

var _ agents.Agent = (*Agent)(nil)

// New returns an AnalysisAgent reading images through files. Options:
// WithVisionModel.
func New(files resolvers.FileResolver, opts ...Option) (*Agent, error) {
	return fileagent.New("analysis", files, &Agent{files: files}, opts...)
}

// Contract declares ANALYSIS: images in, a mergeable categorisation and the
// per-image findings out.
func (a *Agent) Contract() schemas.AgentContract {
	return schemas.AgentContract{
		Name:       Name,
		Version:    "1.0.0",
		Capability: schemas.CapAnalysis,
		Description: "Analyses images (JPEG, PNG, GIF, WebP) from their pixels — dominant hue, brightness, colourfulness, " +
			"orientation, size — and groups them into categories such as sunset, forest, seascape, night and snow.",
		Inputs: []schemas.TypedInput{{
			Name: "images", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentImages, Required: true,
			Description: "the images to analyse",
		}},
		Outputs: []schemas.TypedOutput{
			{Name: "categories", DataType: schemas.TypeCategorization, Mergeable: true,
				Description: "image IDs grouped by category"},
			{Name: "analysis", DataType: schemas.TypeAnalysisResult,
				Description: "per-image labels, caption and features"},
		},
		CanChainWith: []string{"FolderAgent"},
		TimeoutMS:    300_000,
	}
}

// Execute analyses every image of the "images" input. Files that cannot be
// read or decoded are skipped and named in the summary; the task fails only
// when no image at all could be analysed.
func (a *Agent) Execute(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
	t := fileagent.Start(a.Contract())
	ids, err := t.Files(ec, "images")
	if err != nil {
		return t.Abort(err)
	}
	cat := schemas.Categorization{Categories: map[string][]string{}}
	res := schemas.AnalysisResult{Items: []schemas.AnalysisItem{}}
	var (
		byModel, byPixel int
		usage            schemas.Usage
	)
	err = t.EachFile(ctx, a.files, ids, func(i int, id string, f resolvers.File) {
		item, usedModel, used, err := a.analyse(ctx, f)
		if err != nil {
			t.Skip("%s (%s): %v", id, nameOf(f.Ref), err)
			return
		}
		usage = usage.Add(used)
		if usedModel {
			byModel++
		} else {
			byPixel++
		}
		category := item.Labels[0]
		cat.Categories[category] = append(cat.Categories[category], id)
		res.Items = append(res.Items, item)
		if done := i + 1; len(ids) >= 10 && done%max(1, len(ids)/10) == 0 {
			agents.ReportProgress(ctx, fmt.Sprintf("analysed %d of %s", done, schemas.Plural(len(ids), "image", "images")), 100*float64(done)/float64(len(ids)))
		}
	})
	if err != nil {
		return t.Abort(err)
	}

	method := MethodFeatures
	switch {
	case byModel > 0 && byPixel > 0:
		method = MethodMixed
	case byModel > 0:
		method = MethodVision
	}
	cat.Method, res.Method = method, method

	analysed := byModel + byPixel
	if analysed == 0 && len(ids) > 0 {
		return t.FailAll(schemas.CodeInvalidInput, "files could be analysed")
	}

	catValue, err := schemas.NewValue(schemas.TypeCategorization, cat, Name)
	if err != nil {
		return schemas.AgentResult{}, err
	}
	resValue, err := schemas.NewValue(schemas.TypeAnalysisResult, res, Name)
	if err != nil {
		return schemas.AgentResult{}, err
	}
	summary := fmt.Sprintf("categorised %s into %s (method: %s)", schemas.Plural(analysed, "image", "images"), schemas.Plural(len(cat.Categories), "category", "categories"), method)
	if len(cat.Categories) > 0 {
		summary += ": " + fileagent.CountList(cat.Categories)
	}
	return t.Done(summary, map[string]schemas.TypedValue{"categories": catValue, "analysis": resValue}, usage)
}

// analyse decodes one image and describes it, by the vision model when one
// is configured and answers, else by its features. The first label is the
// category. The usage is what the model call used, whether or not its
// answer was kept.
func (a *Agent) analyse(ctx context.Context, f resolvers.File) (schemas.AnalysisItem, bool, schemas.Usage, error) {
	img, format, err := imagefeat.Decode(f.Content)
	if err != nil {
		if errors.Is(err, imagefeat.ErrNotImage) && f.Ref.MediaType != "" && !strings.HasPrefix(f.Ref.MediaType, "image/") {
			return schemas.AnalysisItem{}, false, schemas.Usage{}, fmt.Errorf("not an image but %s", f.Ref.MediaType)
		}
		return schemas.AnalysisItem{}, false, schemas.Usage{}, err
	}
	feat := imagefeat.Extract(img)
	item := schemas.AnalysisItem{ID: f.Ref.ID, Features: feat.Map()}
	var used schemas.Usage
	if a.vision != nil {
		labels, caption, u, err := a.vision.Describe(ctx, f.Content, imagefeat.MediaType(format))
		used = u
		if err == nil {
			if labels = cleanLabels(labels); len(labels) > 0 {
				item.Labels, item.Caption = labels, caption
				return item, true, used, nil
			}
		}
		// The model failed or gave no label: the features still answer.
	}
	item.Labels = []string{feat.Category(), feat.HueName(), feat.Orientation()}
	item.Caption = Caption(feat)
	return item, false, used, nil
}

// Caption describes features in one short sentence, such as "a warm,
// colourful landscape picture, mostly orange (sunset)".
func Caption(f imagefeat.Features) string {
	var adj []string
	switch {
	case f.Brightness < 0.3:
		adj = append(adj, "dark")
	case f.Brightness > 0.65:
		adj = append(adj, "bright")
	}
	switch {
	case f.Warm > 0.3:
		adj = append(adj, "warm")
	case f.Blue+f.Green > 0.3:
		adj = append(adj, "cool")
	}
	switch {
	case f.Colourfulness > 0.5:
		adj = append(adj, "colourful")
	case f.Colourfulness < 0.15:
		adj = append(adj, "muted")
	}
	article := "a"
	if len(adj) == 0 {
		adj = []string{f.Orientation()}
	} else {
		adj[len(adj)-1] += " " + f.Orientation()
	}
	s := strings.Join(adj, ", ")
	if s != "" && strings.ContainsRune("aeiou", rune(s[0])) {
		article = "an"
	}
	return fmt.Sprintf("%s %s picture, mostly %s (%s)", article, s, f.HueName(), f.Category())
}

// cleanLabels lower-cases and trims a model's labels, dropping empty ones.
func cleanLabels(labels []string) []string {
	var out []string
	for _, l := range labels {
		if l = strings.ToLower(strings.TrimSpace(l)); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func nameOf(ref schemas.FileRef) string {
	if ref.Filename != "" {
		return ref.Filename
	}
	if ref.MediaType != "" {
		return ref.MediaType
	}
	return "unnamed"
}
