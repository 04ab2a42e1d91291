package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/schemas"
)

// chatSeedAgents runs search -> analysis -> folder test agents in-process.
func chatSeedAgents(t *testing.T, srv *bustest.Server) {
	images := schemas.TypedOutput{Name: "images", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentImages}
	search := agents.Func(schemas.AgentContract{Name: "ImageSearch", Capability: schemas.CapSearch, Description: "Finds images matching a query.",
		Params:  json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
		Outputs: []schemas.TypedOutput{images}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			fc := schemas.FromIDs(schemas.ContentImages, ec.Param("query")+"-1", ec.Param("query")+"-2")
			return schemas.AgentResult{Success: true, Summary: "found 2 images", Outputs: map[string]schemas.TypedValue{"images": schemas.FilesValue(fc, "ImageSearch")}}, nil
		})
	analysis := agents.Func(schemas.AgentContract{Name: "ImageAnalysis", Capability: schemas.CapAnalysis, Description: "Categorizes images.",
		Inputs:  []schemas.TypedInput{{Name: "images", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentImages, Required: true}},
		Outputs: []schemas.TypedOutput{{Name: "categories", DataType: schemas.TypeCategorization}}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			fc, err := ec.Files("images")
			if err != nil {
				return schemas.AgentResult{}, err
			}
			v, err := schemas.NewValue(schemas.TypeCategorization, schemas.Categorization{Categories: map[string][]string{"sky": fc.IDs()}}, "ImageAnalysis")
			return schemas.AgentResult{Success: true, Summary: "1 category", Outputs: map[string]schemas.TypedValue{"categories": v}}, err
		})
	folder := agents.Func(schemas.AgentContract{Name: "FolderOrganizer", Capability: schemas.CapOrganization, Description: "Moves files into folders.",
		Inputs:  []schemas.TypedInput{{Name: "categories", DataType: schemas.TypeCategorization, Required: true}},
		Outputs: []schemas.TypedOutput{{Name: "folders", DataType: schemas.TypeFolderResult}}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			v, err := schemas.NewValue(schemas.TypeFolderResult, schemas.FolderResult{Folders: map[string][]string{"sky": {"a", "b"}}, Moved: 2}, "FolderOrganizer")
			return schemas.AgentResult{Success: true, Summary: "moved 2 files", Outputs: map[string]schemas.TypedValue{"folders": v}}, err
		})
	for _, a := range []agents.Agent{search, analysis, folder} {
		meshtest.Serve(t, srv.Conn(t), a, agents.WithHeartbeat(time.Second))
	}
}

// The chat command and the orchestrator replica that answers it run as
// separate processes; with no LLM configured the offline planner answers.
func TestChatCommandWithOfflinePlannerProcess(t *testing.T) {
	srv := bustest.Start(t)
	srv.Provision(t)
	chatSeedAgents(t, srv)
	bin := agentBinary(t)
	env := append(os.Environ(), "OPENAI_API_KEY=", "OPENAI_BASE_URL=")

	orch := exec.Command(bin, "--nats", srv.URL(), "orchestrator")
	orch.Env = env
	var orchErr bytes.Buffer
	orch.Stderr = &orchErr
	if err := orch.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = orch.Process.Kill(); _ = orch.Wait() })

	chat := func(args ...string) (string, string, int) {
		cmd := exec.Command(bin, append([]string{"--nats", srv.URL(), "chat", "--timeout", "30s"}, args...)...)
		cmd.Env = env
		return runBinary(t, cmd)
	}

	out, errOut, code := chat("Find sunset images and organize them into folders")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s\norchestrator: %s", code, out, errOut, orchErr.String())
	}
	for _, want := range []string{"offline planner answered", "ImageSearch -> ImageAnalysis -> FolderOrganizer", "completed · offline planner · 3 steps",
		// what the turn produced
		"outputs:", "current_image_ids (FILE_IDS/images): 2 images · from ImageSearch", "- sunset-1",
		"current_categorization (CATEGORIZATION): 1 category, 2 files", "└── sky (2 files)",
		"FolderOrganizer.folders (FOLDER_RESULT): 1 folder, 2 files", "└── sky/ (2 files)"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{"calling ImageSearch", "ImageSearch returned 2 images"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("progress on stderr lacks %q:\n%s", want, errOut)
		}
	}
	var conv string
	if _, err := fmt.Sscanf(errOut, "conversation %s", &conv); err != nil || conv == "" {
		t.Fatalf("no conversation id on stderr: %q", errOut)
	}

	// The next turn of the same conversation asks for something no agent
	// does: the turn fails, --json prints the final event, exit status 1.
	out, _, code = chat("--json", "--conversation", conv, "evaluate them")
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, out)
	}
	var ev struct {
		Type string               `json:"type"`
		Data schemas.ChatResponse `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &ev); err != nil {
		t.Fatalf("--json output is not the event: %v\n%s", err, out)
	}
	if ev.Type != "io.agentmesh.chat.responded" || ev.Data.State != schemas.ChatFailed || ev.Data.ConversationID != conv || !strings.Contains(ev.Data.Error, "EVALUATION") {
		t.Errorf("final event = %+v", ev)
	}

	// conversations lists it with its two turns and the last message.
	list := exec.Command(bin, "--nats", srv.URL(), "conversations")
	list.Env = env
	out, errOut, code = runBinary(t, list)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "CONVERSATION") || !strings.HasPrefix(lines[1], conv) ||
		!strings.Contains(lines[1], "evaluate them") || !strings.Contains(lines[1], "ago") {
		t.Errorf("conversations: exit %d\n%s%s", code, out, errOut)
	}
	if f := strings.Fields(lines[len(lines)-1]); len(f) < 2 || f[1] != "2" {
		t.Errorf("conversations: want 2 turns in %q", lines[len(lines)-1])
	}
	if ev.Data.Code != schemas.CodeInvalidRequest {
		t.Errorf("code = %q, want %q (the offline planner found no plan)", ev.Data.Code, schemas.CodeInvalidRequest)
	}

	// A mistyped --conversation is an error, not a new conversation; --new
	// asks for one, and refuses an id that exists.
	out, errOut, code = chat("--conversation", "no-such-conv", "find sunset images")
	if code == 0 || !strings.Contains(errOut, `--conversation "no-such-conv": no such conversation`) || !strings.Contains(errOut, "--new") {
		t.Errorf("unknown conversation: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	out, errOut, code = chat("--conversation", conv, "--new", "find sunset images")
	if code == 0 || !strings.Contains(errOut, "exists already") {
		t.Errorf("--new on an existing conversation: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	out, errOut, code = chat("--conversation", "named-by-me", "--new", "find sunset images")
	if code != 0 || !strings.Contains(out, "conversation named-by-me") {
		t.Errorf("--new: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}
