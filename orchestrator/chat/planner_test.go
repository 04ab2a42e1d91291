package chat_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/internal/fixture"

	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/schemas"
)

func plannerContracts() []schemas.AgentContract {
	docSearch := schemas.AgentContract{Name: "DocSearch", Capability: schemas.CapSearch, Description: "Finds documents and PDFs by keywords.",
		Params:  []byte(`{"type":"object","properties":{"query":{"type":"string"}}}`),
		Outputs: []schemas.TypedOutput{fixture.FilesOut("documents", schemas.ContentDocuments, true)}}
	summarize := schemas.AgentContract{Name: "Summarizer", Capability: schemas.CapGeneration, Description: "Writes a summary of documents.",
		Inputs:  []schemas.TypedInput{fixture.FilesIn("documents", schemas.ContentDocuments, true)},
		Outputs: []schemas.TypedOutput{{Name: "summary", DataType: schemas.TypeText}}}
	return []schemas.AgentContract{chatFolderContract(), chatAnalysisContract(), chatSearchContract(), docSearch, summarize}
}

func TestPlanOffline(t *testing.T) {
	images := map[string]schemas.TypedValue{route.SlotImageIDs: schemas.FilesValue(schemas.FromIDs(schemas.ContentImages, "a"), "x")}
	for _, tc := range []struct {
		message string
		slots   map[string]schemas.TypedValue
		want    []string
		query   string
	}{
		// The folder agent needs a CATEGORIZATION: analysis is inserted.
		{"Find sunset images and organize them into folders", nil, []string{"ImageSearch", "ImageAnalysis", "FolderOrganizer"}, "sunset"},
		{"search for 'red cars' then categorize them", nil, []string{"ImageSearch", "ImageAnalysis"}, "red cars"},
		// Order follows the data, not the words.
		{"organize into folders the beach photos you find", nil, []string{"ImageSearch", "ImageAnalysis", "FolderOrganizer"}, "beach"},
		// Earlier slots feed the chain: no search needed.
		{"now organize the ones from last time", images, []string{"ImageAnalysis", "FolderOrganizer"}, ""},
		// Content words pick the documents agents.
		{"find documents about budgets and summarize them", nil, []string{"DocSearch", "Summarizer"}, "budgets"},
		{"summarize", nil, []string{"DocSearch", "Summarizer"}, ""},
	} {
		plan, err := chat.PlanOffline(tc.message, plannerContracts(), tc.slots, nil)
		if err != nil {
			t.Errorf("%q: %v", tc.message, err)
			continue
		}
		if got := plan.Agents(); !slices.Equal(got, tc.want) {
			t.Errorf("%q: plan %v, want %v", tc.message, got, tc.want)
		}
		if plan.Query != tc.query {
			t.Errorf("%q: query %q, want %q", tc.message, plan.Query, tc.query)
		}
		if tc.query != "" && plan.Steps[0].Params["query"] != tc.query {
			t.Errorf("%q: search params %v", tc.message, plan.Steps[0].Params)
		}
		for _, s := range plan.Steps[1:] {
			if _, has := s.Params["query"]; has {
				t.Errorf("%q: %s got the search query %v", tc.message, s.Agent, s.Params)
			}
		}
	}
}

// An agent the planner has no verb for is reached by its name and
// description: a Node.js word counter for "count the words ...", fed by
// the documents search when its required input is not in state.
func TestPlanOfflineByDescription(t *testing.T) {
	counter := schemas.AgentContract{Name: "NodeWordCount", Capability: schemas.CapAnalysis,
		Description: "Counts the words of documents or of a text and names the most frequent words.",
		Inputs:      []schemas.TypedInput{fixture.FilesIn("documents", schemas.ContentDocuments, true)},
		Outputs:     []schemas.TypedOutput{{Name: "report", DataType: schemas.TypeText}}}
	contracts := append(plannerContracts(), counter)
	plan, err := chat.PlanOffline("count the words of the budget documents", contracts, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := plan.Agents(); !slices.Equal(got, []string{"DocSearch", "NodeWordCount"}) {
		t.Errorf("plan %v, want DocSearch feeding NodeWordCount", got)
	}
	if r := plan.Steps[len(plan.Steps)-1].Reason; r != "asked: count, words" {
		t.Errorf("reason %q", r)
	}
	docs := map[string]schemas.TypedValue{route.SlotDocumentIDs: schemas.FilesValue(schemas.FromIDs(schemas.ContentDocuments, "d"), "x")}
	if plan, err := chat.PlanOffline("word count please", contracts, docs, nil); err != nil || !slices.Equal(plan.Agents(), []string{"NodeWordCount"}) {
		t.Errorf("with documents in state: plan %v, %v", plan.Agents(), err)
	}
	if _, err := chat.PlanOffline("feed the sheep", contracts, nil, nil); !errors.Is(err, chat.ErrNoPlan) || !strings.Contains(err.Error(), `speak of "feed", "sheep"`) {
		t.Errorf("words no contract speaks of: %v", err)
	}
}

func TestPlanOfflineRespectsCanChainWith(t *testing.T) {
	other := chatAnalysisContract()
	other.Name = "AAnalysis" // would win a tie by name
	contracts := append(plannerContracts(), other)
	plan, err := chat.PlanOffline("find sunsets and categorize them", contracts, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := plan.Agents(); !slices.Equal(got, []string{"ImageSearch", "ImageAnalysis"}) {
		t.Errorf("plan %v: ImageSearch chains with ImageAnalysis", got)
	}
}

func TestPlanOfflineSaysWhatIsMissing(t *testing.T) {
	for _, tc := range []struct {
		message   string
		contracts []schemas.AgentContract
		want      string
	}{
		{"hello there", plannerContracts(), "asks for nothing"},
		{"organize into folders", []schemas.AgentContract{chatFolderContract()}, "CATEGORIZATION"},
		{"evaluate the photos", plannerContracts(), "EVALUATION"},
	} {
		_, err := chat.PlanOffline(tc.message, tc.contracts, nil, nil)
		if !errors.Is(err, chat.ErrNoPlan) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want ErrNoPlan mentioning %q", tc.message, err, tc.want)
		}
	}
}

func ExamplePlanOffline() {
	contracts := []schemas.AgentContract{chatFolderContract(), chatAnalysisContract(), chatSearchContract()}
	plan, err := chat.PlanOffline("Find sunset images and organize them into folders", contracts, nil, nil)
	if err != nil {
		panic(err)
	}
	for _, s := range plan.Steps {
		fmt.Println(s.Agent, s.Params, "-", s.Reason)
	}
	// Output:
	// ImageSearch map[query:sunset] - asked: find, images
	// ImageAnalysis map[] - feeds CATEGORIZATION to FolderOrganizer
	// FolderOrganizer map[] - asked: organize, folders
}
