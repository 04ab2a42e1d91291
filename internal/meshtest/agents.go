package meshtest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/schemas"
)

// The test agents more than one package's tests run.

// Filer turns its TEXT input (a file id) into a FILE_IDS of that one id,
// counting how many of its tasks run at once (Most) and how many ended
// (Done).
type Filer struct {
	Running, Most, Done atomic.Int64
	Delay               time.Duration // per task; default 2 ms
}

// FilerName is the agent name of a Filer.
const FilerName = "Filer"

// Contract is the Filer's contract.
func (f *Filer) Contract() schemas.AgentContract {
	return schemas.AgentContract{Name: FilerName, Version: "1.0.0", Capability: schemas.CapTransformation,
		Description: "Turns a file id given as text into a collection of that one file.",
		Inputs:      []schemas.TypedInput{{Name: "id", DataType: schemas.TypeText, Required: true}},
		Outputs:     []schemas.TypedOutput{fixture.FilesOut("files", schemas.ContentDocuments, true)},
		TimeoutMS:   60_000}
}

// Execute runs one task: the file id "bad" fails it.
func (f *Filer) Execute(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
	n := f.Running.Add(1)
	defer f.Running.Add(-1)
	for m := f.Most.Load(); n > m && !f.Most.CompareAndSwap(m, n); m = f.Most.Load() {
	}
	id, err := ec.Text("id")
	if err != nil {
		return schemas.AgentResult{}, err
	}
	if id == "bad" {
		return schemas.AgentResult{}, fmt.Errorf("file id %q is not one", id)
	}
	d := f.Delay
	if d == 0 {
		d = 2 * time.Millisecond
	}
	time.Sleep(d) // the agent's work, not a wait
	f.Done.Add(1)
	return fixture.OK(FilerName, "one file", map[string]schemas.TypedValue{"files": fixture.Files(schemas.ContentDocuments, id)}), nil
}

// Appender runs agent Appender, which appends "x" to its text, counting
// its calls.
func (m *Mesh) Appender(t testing.TB, calls *atomic.Int64) {
	c := schemas.AgentContract{Name: "Appender", Version: "1.0.0", Capability: schemas.CapTransformation,
		Description: "Appends x to its text.",
		Inputs:      []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
		Outputs:     []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}}
	m.Agent(t, c, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		calls.Add(1)
		s, err := ec.Text("text")
		if err != nil {
			return schemas.AgentResult{}, err
		}
		return fixture.OK("Appender", "appended", map[string]schemas.TypedValue{"text": schemas.TextValue(s+"x", "Appender")}), nil
	}, 1)
}

// SearchAgent runs ImageSearchAgent, which finds three images named after
// its param query, counting its runs under "search" when runs is not nil.
func (m *Mesh) SearchAgent(t testing.TB, runs *fixture.Counter) {
	m.Agent(t, schemas.AgentContract{Name: "ImageSearchAgent", Capability: schemas.CapSearch, Description: "finds images",
		Params:  json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
		Outputs: []schemas.TypedOutput{fixture.FilesOut("images", schemas.ContentImages, true)}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			if runs != nil {
				runs.Add("search")
			}
			q := ec.Param("query")
			fc := schemas.FromIDs(schemas.ContentImages, q+"-1", q+"-2", q+"-3").WithSource(schemas.CapSearch)
			return fixture.OK("ImageSearchAgent", "found 3 "+q+" images", map[string]schemas.TypedValue{"images": schemas.FilesValue(fc, "")}), nil
		}, 4)
}

// AnalysisAgent runs AnalysisAgent, which labels each image "sky" and
// sorts them into warm and cool by turns.
func (m *Mesh) AnalysisAgent(t testing.TB) {
	m.Agent(t, schemas.AgentContract{Name: "AnalysisAgent", Capability: schemas.CapAnalysis, Description: "labels images",
		Inputs: []schemas.TypedInput{fixture.FilesIn("images", schemas.ContentImages, true)},
		Outputs: []schemas.TypedOutput{{Name: "analysis", DataType: schemas.TypeAnalysisResult},
			{Name: "categories", DataType: schemas.TypeCategorization, Mergeable: true}}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			fc, err := ec.Files("images")
			if err != nil {
				return schemas.AgentResult{}, err
			}
			var items []schemas.AnalysisItem
			cats := map[string][]string{}
			for i, id := range fc.IDs() {
				items = append(items, schemas.AnalysisItem{ID: id, Labels: []string{"sky"}})
				k := []string{"warm", "cool"}[i%2]
				cats[k] = append(cats[k], id)
			}
			return fixture.OK("AnalysisAgent", "analysed", map[string]schemas.TypedValue{
				"analysis":   fixture.MustValue(t, schemas.TypeAnalysisResult, schemas.AnalysisResult{Items: items}, ""),
				"categories": fixture.MustValue(t, schemas.TypeCategorization, schemas.Categorization{Categories: cats}, ""),
			}), nil
		}, 4)
}
