package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/stateview"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

var chatSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"message":         map[string]any{"type": "string", "description": "what to ask the mesh"},
		"conversation_id": map[string]any{"type": "string", "description": "continue this conversation (the conversation_id of an earlier answer); leave out to start one"},
	},
	"required": []string{"message"},
}

var pipelineSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"pipeline": map[string]any{
			"description": "the pipeline spec (name, seed, steps with id, agent, params, depends_on), as YAML or JSON text or as an object",
			"anyOf":       []any{map[string]any{"type": "string"}, map[string]any{"type": "object"}},
		},
		"vars": map[string]any{"type": "object", "description": "values of the pipeline's vars, by name", "additionalProperties": true},
	},
	"required": []string{"pipeline"},
}

// addMeshTools adds the chat and run_pipeline tools.
func (s *Server) addMeshTools() {
	s.mcp.AddTool(&mcp.Tool{
		Name:  ToolChat,
		Title: "Chat with the mesh",
		Description: "One chat turn: the mesh's orchestrator plans with its LLM (or offline planner), calls agents " +
			"and answers. Returns the answer and the conversation_id to continue with.",
		InputSchema: chatSchema,
	}, s.chat)
	s.mcp.AddTool(&mcp.Tool{
		Name:  ToolRunPipeline,
		Title: "Run a pipeline",
		Description: "Validate and run a declared pipeline (steps naming agents, with params and depends_on) " +
			"and return how each step ended and what it produced.",
		InputSchema: pipelineSchema,
	}, s.runPipeline)
}

func (s *Server) chat(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Message        string `json:"message"`
		ConversationID string `json:"conversation_id"`
	}
	if err := json.Unmarshal(orEmptyObject(req.Params.Arguments), &args); err != nil {
		return toolError(schemas.CodeInvalidRequest, fmt.Sprintf("the arguments of chat are not {message, conversation_id} (%v)", err), false), nil
	}
	if strings.TrimSpace(args.Message) == "" {
		return toolError(schemas.CodeInvalidRequest, "message is empty: say what to ask the mesh", false), nil
	}
	if args.ConversationID != "" {
		if err := bus.ValidateToken("conversation id", args.ConversationID); err != nil {
			return toolError(schemas.CodeInvalidID, err.Error()+"; give the conversation_id of an earlier answer, or leave it out to start a conversation", false), nil
		}
	}
	p := newProgress(ctx, req)
	tctx, cancel := context.WithTimeout(ctx, s.cfg.timeout)
	defer cancel()
	resp, _, err := client.Turn(tctx, s.js, s.cfg.names, args.ConversationID, args.Message, s.cfg.source,
		func(tp schemas.TaskProgress) { p.send(ctx, tp.Message) }, nil, client.WithDeltas(func(d schemas.ChatDelta) {
			if d.TaskID == "" { // the chat's model; an agent's text stays in its task
				p.sendText(ctx, d.Text)
			}
		}))
	p.close()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		code := schemas.CodeTimeout
		if tctx.Err() == nil {
			code = schemas.CodeInvalidRequest
		}
		return toolError(code, err.Error(), code == schemas.CodeTimeout), nil
	}
	if resp.State == schemas.ChatFailed {
		code := resp.Code
		if code == "" {
			code = schemas.CodeInternal
		}
		return toolError(code, resp.Error+" (conversation "+resp.ConversationID+")", false), nil
	}
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: resp.Output}},
		StructuredContent: map[string]any{
			"conversation_id": resp.ConversationID, "state": resp.State, "output": resp.Output,
			"steps": resp.Steps, "tool_calls": resp.ToolCalls,
		},
	}, nil
}

// runPipeline is long because it reads the arguments, submits, follows the
// run's events as progress and assembles the answer in one flow.
func (s *Server) runPipeline(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Pipeline json.RawMessage `json:"pipeline"`
		Vars     map[string]any  `json:"vars"`
	}
	if err := json.Unmarshal(orEmptyObject(req.Params.Arguments), &args); err != nil {
		return toolError(schemas.CodeInvalidPipeline, fmt.Sprintf("the arguments of run_pipeline are not {pipeline, vars} (%v)", err), false), nil
	}
	spec, err := specOf(args.Pipeline)
	if err != nil {
		return toolError(schemas.CodeInvalidPipeline, err.Error(), false), nil
	}
	if len(args.Vars) > 0 {
		if spec.Vars == nil {
			spec.Vars = map[string]any{}
		}
		maps.Copy(spec.Vars, args.Vars)
	}
	runID := "mcp-" + uuid.NewString()
	tctx, cancel := context.WithTimeout(ctx, s.cfg.timeout)
	defer cancel()
	events, stop, err := client.Follow(tctx, s.js, s.cfg.names, s.cfg.names.EventsOf(runID), false)
	if err != nil {
		return toolError(schemas.CodeInternal, err.Error(), true), nil
	}
	defer stop()
	if _, err := client.SubmitPipeline(tctx, s.js, s.cfg.names, spec, runID, s.cfg.source); err != nil {
		return toolError(schemas.CodeInternal, err.Error(), true), nil
	}
	p := newProgress(ctx, req)
	p.send(ctx, "run "+runID+" submitted")
	for {
		select {
		case <-tctx.Done():
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return toolError(schemas.CodeTimeout, fmt.Sprintf("run %s did not end within %s; it goes on in the mesh ('agentmesh watch %s')", runID, s.cfg.timeout, runID), false), nil
		case ev := <-events:
			switch {
			case strings.HasPrefix(ev.Type, bus.TypePipelineStepPrefix):
				var se schemas.StepEvent
				if ev.DataAs(&se) == nil {
					p.send(ctx, stepMessage(se))
				}
			case ev.Type == bus.TypePipelineCompleted:
				var re schemas.RunEvent
				if err := ev.DataAs(&re); err != nil {
					return toolError(schemas.CodeInternal, "the run's final event does not decode: "+err.Error(), false), nil
				}
				return s.runResult(ctx, re), nil
			}
		}
	}
}

func stepMessage(se schemas.StepEvent) string {
	msg := fmt.Sprintf("step %s (%s) %s", se.Step, se.Agent, se.Status)
	if se.Summary != "" {
		msg += ": " + se.Summary
	}
	if se.Error != "" {
		msg += ": " + se.Error
	}
	return msg
}

// runResult maps a run's final event, with each step's record when the
// runs bucket can be read: a failed run is a tool error with the run's code.
func (s *Server) runResult(ctx context.Context, re schemas.RunEvent) *mcp.CallToolResult {
	steps := map[string]any{}
	var texts []mcp.Content
	if s.res.Runs != nil {
		if run, err := stateview.New(s.res.Conversations, s.res.Runs).Run(ctx, re.RunID); err == nil {
			for _, id := range slices.Sorted(maps.Keys(run.Steps)) {
				st := run.Steps[id]
				steps[id] = map[string]any{"agent": st.Agent, "status": st.Status, "summary": st.Summary, "error": st.Error, "code": st.Code, "outputs": st.Outputs}
				for _, name := range slices.Sorted(maps.Keys(st.Outputs)) {
					if txt, err := st.Outputs[name].Text(); err == nil && st.Outputs[name].DataType == schemas.TypeText {
						texts = append(texts, &mcp.TextContent{Text: fmt.Sprintf("%s.%s: %s", id, name, txt)})
					}
				}
			}
		}
	}
	if re.Status != schemas.RunCompleted {
		code := re.Code
		if code == "" {
			code = schemas.CodeStepFailed
		}
		res := toolError(code, fmt.Sprintf("run %s %s: %s", re.RunID, re.Status, re.Error), false)
		res.StructuredContent.(map[string]any)["runid"] = re.RunID
		res.StructuredContent.(map[string]any)["steps"] = steps
		return res
	}
	head := fmt.Sprintf("run %s completed: %d of %d steps completed, %d skipped", re.RunID, re.Completed, re.Steps, re.Skipped)
	return &mcp.CallToolResult{
		Content:           append([]mcp.Content{&mcp.TextContent{Text: head}}, texts...),
		StructuredContent: map[string]any{"runid": re.RunID, "status": re.Status, "steps": steps},
	}
}

// specOf reads a pipeline given as YAML or JSON text or as an object.
func specOf(raw json.RawMessage) (pipelinespec.PipelineSpec, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return pipelinespec.PipelineSpec{}, fmt.Errorf("pipeline is missing: give the spec as YAML or JSON text, or as an object")
	}
	if raw[0] == '{' {
		return client.ParsePipeline(raw, "json")
	}
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		return pipelinespec.PipelineSpec{}, fmt.Errorf("pipeline is neither text nor an object: %s", clip(raw))
	}
	format := "yaml"
	if strings.HasPrefix(strings.TrimSpace(text), "{") {
		format = "json"
	}
	return client.ParsePipeline([]byte(text), format)
}

func orEmptyObject(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("{}")
	}
	return raw
}
