package eval

import (
	"bytes"
	"encoding/xml"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/schemas"
)

const goodSet = `
name: readme
runs: 3
threshold: 0.6
cases:
  - name: sunsets
    chat: Find sunset images and organize them into folders
    expect:
      contains: [sunset]
      regex: ['found \d+ images']
      agents: [ImageSearchAgent, FolderAgent]
      params: {ImageSearchAgent: {query: sunset, limit: 5}}
      max_cost: 0.01
      max_latency: 30s
`

func TestParse(t *testing.T) {
	s, err := Parse([]byte(goodSet))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Cases[0]
	if s.Runs != 3 || s.Threshold != 0.6 || c.Expect.MaxLatency != Duration(30*time.Second) || c.Expect.Params["ImageSearchAgent"]["limit"] != 5 {
		t.Errorf("parsed %+v", s)
	}
	d, err := Parse([]byte("name: x\ncases: [{name: a, chat: hi}]\n"))
	if err != nil || d.Runs != 1 || d.Threshold != 1 {
		t.Errorf("defaults: %+v %v", d, err)
	}
	for _, tt := range []struct{ yaml, says string }{
		{"", "the file is empty"},
		{"name: x\ncases: []\n", "no cases"},
		{"name: x\nrun: 2\ncases: [{name: a, chat: hi}]\n", "field run not found"},
		{"name: x\nruns: 1000\ncases: [{name: a, chat: hi}]\n", "runs 1000"},
		{"name: x\nthreshold: 1.5\ncases: [{name: a, chat: hi}]\n", "threshold 1.5"},
		{"name: x\ncases: [{name: a, chat: hi}, {name: a, chat: ho}]\n", `case "a": the name is used twice`},
		{"name: x\ncases: [{chat: hi}]\n", "case 1 has no name"},
		{"name: x\ncases: [{name: a}]\n", `case "a" has no chat message`},
		{"name: x\ncases: [{name: a, chat: hi, expect: {regex: ['(']}}]\n", "regex \"(\""},
		{"name: x\ncases: [{name: a, chat: hi, expect: {state: done}}]\n", `state "done"`},
		{"name: x\ncases: [{name: a, chat: hi, expect: {max_latency: soon}}]\n", `"soon" is not a duration`},
	} {
		_, err := Parse([]byte(tt.yaml))
		if !errors.Is(err, ErrInvalidSet) || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%q: %v, want an error saying %q", tt.yaml, err, tt.says)
		}
	}
	// Every problem at once.
	_, err = Parse([]byte("name: x\nruns: -1\ncases: [{name: a}]\n"))
	if err == nil || !strings.Contains(err.Error(), "runs -1") || !strings.Contains(err.Error(), "no chat message") {
		t.Errorf("all problems: %v", err)
	}
}

func TestCheck(t *testing.T) {
	resp := schemas.ChatResponse{
		State: schemas.ChatCompleted, Output: "I found 5 images and put the Sunset ones in a folder.", DurationMS: 1200,
		ToolCalls: []schemas.ToolCallRecord{
			{Agent: "ImageSearchAgent", Arguments: `{"query":"sunset","limit":5}`},
			{Agent: "AnalysisAgent"},
			{Agent: "FolderAgent"},
		},
		Usage: schemas.Usage{Cost: 0.002},
	}
	s, _ := Parse([]byte(goodSet))
	if miss := Check(s.Cases[0].Expect, resp); len(miss) != 0 {
		t.Errorf("a matching turn missed %q", miss)
	}
	for _, tt := range []struct {
		name string
		e    Expect
		want []string
	}{
		{"state", Expect{State: schemas.ChatFailed}, []string{"state completed, want failed"}},
		{"contains", Expect{Contains: []string{"forest"}}, []string{`the answer lacks "forest"`}},
		{"not contains", Expect{NotContains: []string{"SUNSET"}}, []string{`the answer holds "SUNSET"`}},
		{"regex", Expect{Regex: []string{`found \d+ documents`}}, []string{`the answer does not match "found \\d+ documents"`}},
		{"order", Expect{Agents: []string{"FolderAgent", "AnalysisAgent"}}, []string{"agents called ImageSearchAgent -> AnalysisAgent -> FolderAgent, want FolderAgent -> AnalysisAgent in that order"}},
		{"missing agent", Expect{Agents: []string{"TextAgent"}}, []string{"agents called ImageSearchAgent -> AnalysisAgent -> FolderAgent, want TextAgent in that order"}},
		{"params", Expect{Params: map[string]map[string]any{"ImageSearchAgent": {"query": "forest"}}}, []string{`ImageSearchAgent was called with query="sunset", want "forest"`}},
		{"params of no call", Expect{Params: map[string]map[string]any{"TextAgent": {"op": "upper"}}}, []string{"TextAgent was not called, so its params cannot be checked"}},
		{"cost", Expect{MaxCost: 0.001}, []string{"cost $0.0020, over max_cost $0.0010"}},
		{"latency", Expect{MaxLatency: Duration(time.Second)}, []string{"took 1.2s, over max_latency 1s"}},
	} {
		if got := Check(tt.e, resp); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestReports(t *testing.T) {
	s := Set{Name: "readme", Runs: 2, Threshold: 0.5, Cases: []Case{{Name: "a"}, {Name: "b"}}}
	results := Results(s, []Run{
		{Case: "a", N: 1, Duration: time.Second},
		{Case: "a", N: 2, Misses: []string{"the answer lacks \"x\""}, Duration: time.Second},
		{Case: "b", N: 1, Err: errors.New("no answer within 30s"), Duration: 2 * time.Second},
		{Case: "b", N: 2, Misses: []string{"state failed, want completed"}, Cost: 0.5},
	})
	if !results[0].Passed || results[1].Passed || results[0].PassRate() != 0.5 {
		t.Fatalf("results %+v", results)
	}
	var table bytes.Buffer
	if err := WriteTable(&table, results); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"a     pass    1/2", `run 2: the answer lacks "x"`, "b     FAIL    0/2", "run 1: no answer within 30s", "$0.2500", "1 of 2 cases passed"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	var out bytes.Buffer
	if err := WriteJUnit(&out, s, results); err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("JUnit XML does not parse: %v\n%s", err, out.String())
	}
	suite := doc.Suites[0]
	if suite.Name != "readme" || suite.Tests != 4 || suite.Failures != 2 || suite.Errors != 1 || suite.Cases[1].Name != "a #2" || suite.Cases[1].Failure == nil || suite.Cases[2].Error == nil {
		t.Errorf("JUnit %+v", suite)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(goodSet))
	f.Add([]byte("name: x\ncases: [{name: a, chat: hi, expect: {max_latency: 1s, params: {A: {b: [1]}}}}]\n"))
	f.Add([]byte("runs: 0\nthreshold: -1\n"))
	f.Add([]byte(schemaSet))
	f.Add([]byte(pipelineSet))
	f.Add([]byte(judgedSet))
	f.Add([]byte("name: x\ncases: [{name: a, chat: hi, expect: {schema: {1: [x]}}}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidSet) {
				t.Fatalf("error %v does not wrap ErrInvalidSet", err)
			}
			return
		}
		if s.Runs < 1 || s.Runs > MaxRuns || s.Threshold <= 0 || s.Threshold > 1 || len(s.Cases) == 0 {
			t.Fatalf("accepted %+v", s)
		}
		for _, c := range s.Cases {
			Check(c.Expect, schemas.ChatResponse{})
			CheckOutcome(c.Expect, Outcome{})
		}
	})
}
