package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/schemas"
	"github.com/agentmesh/agentmesh/telemetry"
)

func init() { register(newTaskCmd) }

// newTaskCmd is the task command: long for its help text and flags, which
// read best in one place.
func newTaskCmd(a *app) *cobra.Command {
	var (
		params      []string
		inputs      []string
		texts       []string
		instruction string
		timeout     time.Duration
		direct      bool
		version     string
	)
	cmd := &cobra.Command{
		Use:   "task AGENT [--input name=ID,ID...] [--text name=TEXT] [--param k=v]... [--direct]",
		Short: "Invoke one agent directly and print its result",
		Long: `Publish one task to mesh.task.AGENT, wait for its result on mesh.result.AGENT.<taskid>
and print it. Exit status 1 when the task failed, or was not sent because
MESH_TASKS is at a limit (backlog_full, said at once; see docs/errors.md).

With --direct the task goes to the agent's NATS micro endpoint mesh.call.AGENT
instead, with core request-reply: no stream, so no retry and no dead letter,
at most once, answered within --timeout or not at all; a live instance must be
running. The durable path (the default) keeps the task until an instance takes
it and retries it when a delivery fails.

With --version V the task is pinned to version V of the agent: it goes to
mesh.task.AGENT.v.<V> ('.' written '_'), taken only by the instances serving
V, whatever a rollout ('agentmesh rollout') says.

Inputs:
  --input name=ID,ID,...   FILE_IDS: stored file ids, comma-separated; the content
                           hint is the one the live agent's contract declares.
                           When the live contract declares the input TEXT, the
                           value is taken as text instead.
  --input name=@FILE       TEXT read from FILE ('@-' reads stdin)
  --text name=TEXT         TEXT given literally
Params:
  --param k=v              a JSON value (5, true, ["a"]) or else a string

Examples:
  agentmesh task TextAgent --text text="hello mesh" --param op=title
  agentmesh task TextAgent --text text="hello mesh" --param op=title --direct`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			agent := args[0]
			if err := bus.ValidateAgentName(agent); err != nil {
				return err
			}
			if timeout <= 0 {
				return usagef("--timeout %s: give a positive duration such as 30s", timeout)
			}
			if version != "" {
				if direct {
					return usagef("--version pins a task of MESH_TASKS; a --direct call goes to any live instance")
				}
				if _, err := bus.VersionToken(version); err != nil {
					return usagef("--version: %v", err)
				}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout+10*time.Second)
			defer cancel()
			m, err := a.connect(ctx, "agentmesh task")
			if err != nil {
				return err
			}
			defer m.Close()

			contract, live := liveContract(ctx, m, agent)
			req := schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{}, Instruction: instruction, TimeoutMS: timeout.Milliseconds()}
			if req.Params, err = parseParams(params); err != nil {
				return err
			}
			for _, kv := range inputs {
				name, v, err := parseInput(kv, contract)
				if err != nil {
					return err
				}
				req.Inputs[name] = v
			}
			for _, kv := range texts {
				name, s, ok := strings.Cut(kv, "=")
				if !ok || name == "" {
					return usagef("--text %q: write name=TEXT, e.g. --text text=hello", kv)
				}
				req.Inputs[name] = schemas.TextValue(s, "cli")
			}
			if !live && !direct {
				fmt.Fprintf(a.errOut, "agentmesh: no live instance of %s yet; the task waits in MESH_TASKS until one starts (or --timeout %s passes)\n", agent, timeout)
			}

			ev, err := bus.NewEvent(bus.TypeTaskRequested, "/agentmesh/cli", req)
			if err != nil {
				return err
			}
			ev.DataContentType = bus.ContentTypeJSON
			ev.SetExt(bus.ExtDeadline, time.Now().Add(timeout).UTC().Format(time.RFC3339Nano))
			ctx, span := telemetry.Start(cmd.Context(), "task send "+agent, trace.WithSpanKind(trace.SpanKindClient),
				trace.WithAttributes(telemetry.AttrAgent.String(agent), telemetry.AttrTaskID.String(ev.ID)))
			defer span.End()
			client.SetTraceParent(ctx, &ev)
			var reply *nats.Msg
			if direct {
				reply, err = sendDirect(ctx, m, agent, ev, timeout)
			} else {
				reply, err = sendDurable(ctx, m, agent, version, ev, timeout)
			}
			if err != nil {
				return err
			}
			rev, err := bus.Decode(reply)
			if err != nil {
				return fmt.Errorf("result of task %s: %w", ev.ID, err)
			}
			var res schemas.AgentResult
			if err := rev.DataAs(&res); err != nil {
				return err
			}
			v := newViewer(ctx, m)
			if a.jsonOut {
				if err := a.printJSON(struct {
					TaskID string `json:"taskid"`
					schemas.AgentResult
					Views []valueView `json:"views"`
				}{ev.ID, res, v.views(res.Outputs)}); err != nil {
					return err
				}
			} else {
				printResult(a, v, ev.ID, rev.Source, res)
			}
			if !res.Success {
				return exitError{code: 1, msg: fmt.Sprintf("%s failed: %v", agent, res.Err())}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&inputs, "input", nil, "input name=ID,ID... (FILE_IDS) or name=@FILE (TEXT); repeatable")
	f.StringArrayVar(&texts, "text", nil, "TEXT input name=TEXT; repeatable")
	f.StringArrayVar(&params, "param", nil, "parameter k=v (v as JSON when it parses, else a string); repeatable")
	f.StringVar(&instruction, "instruction", "", "natural-language instruction for the agent")
	f.DurationVar(&timeout, "timeout", 30*time.Second, "how long the agent may take; also the task's deadline")
	f.StringVar(&version, "version", "", "pin the task to this version of the agent: it goes to mesh.task.AGENT.v.<version>, whatever a rollout says")
	f.BoolVar(&direct, "direct", false, "call the agent's micro endpoint mesh.call.AGENT (core request-reply: no stream, no retry) instead of MESH_TASKS")
	return cmd
}

// sendDurable publishes the task to mesh.task.AGENT (or, pinned to a
// version, mesh.task.AGENT.v.<version>) through JetStream and waits for
// its result on mesh.result.<taskid>.
func sendDurable(ctx context.Context, m *mesh, agent, version string, ev bus.Event, timeout time.Duration) (*nats.Msg, error) {
	replyTo := m.Names.Result(agent, ev.ID)
	if m.ID.Role == bus.RoleClient {
		// Where only this client may read it on a secure mesh.
		replyTo = m.Names.ClientResult(agent, m.ID.Name, ev.ID)
		ev.SetExt(bus.ExtReplyTo, replyTo)
	}
	sub, err := m.NC.SubscribeSync(replyTo)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	subj, err := m.Names.Task(agent)
	if version != "" {
		subj, err = m.Names.TaskVersion(agent, version)
	}
	if err != nil {
		return nil, err
	}
	msg, err := bus.Encode(subj, ev)
	if err != nil {
		return nil, err
	}
	msg.Header.Set(jetstream.MsgIDHeader, ev.ID) // a try whose ack was lost is stored once
	if err := bus.SignTask(m.NC, msg); err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := bus.Publish(pctx, m.JS, msg); err != nil {
		if errors.Is(err, bus.ErrBacklogFull) {
			return nil, exitError{code: 1, msg: fmt.Sprintf("task %s was not sent to %s: %v", ev.ID, agent, err)}
		}
		return nil, fmt.Errorf("publishing the task to %s: %w", subj, err)
	}
	wait, stop := context.WithTimeout(ctx, timeout+2*time.Second)
	defer stop()
	reply, err := sub.NextMsgWithContext(wait)
	if err != nil {
		if ctx.Err() != nil {
			return nil, exitError{code: 130, msg: "interrupted; the task " + ev.ID + " may still run"}
		}
		return nil, exitError{code: 1, msg: fmt.Sprintf("no result for task %s within %s: is %s running? ('agentmesh agents')", ev.ID, timeout, agent)}
	}
	return reply, nil
}

// sendDirect sends the task to the agent's micro endpoint mesh.call.AGENT
// with core request-reply; the reply is the result event.
func sendDirect(ctx context.Context, m *mesh, agent string, ev bus.Event, timeout time.Duration) (*nats.Msg, error) {
	subj, err := m.Names.Call(agent)
	if err != nil {
		return nil, err
	}
	msg, err := bus.Encode(subj, ev)
	if err != nil {
		return nil, err
	}
	// Signed on a secure mesh, as a queued task is: the agent takes the
	// call as this client's (its owner, its files), not as no one's.
	if err := bus.SignTask(m.NC, msg); err != nil {
		return nil, err
	}
	wait, stop := context.WithTimeout(ctx, timeout+2*time.Second)
	defer stop()
	reply, err := m.NC.RequestMsgWithContext(wait, msg)
	switch {
	case err == nil:
		return reply, nil
	case errors.Is(err, nats.ErrNoResponders):
		return nil, exitError{code: 1, msg: fmt.Sprintf("no instance of %s answers %s: start one ('agentmesh agents' lists the live ones), or leave out --direct to queue the task in MESH_TASKS", agent, subj)}
	case ctx.Err() != nil:
		return nil, exitError{code: 130, msg: "interrupted; the call " + ev.ID + " may still run"}
	default:
		return nil, exitError{code: 1, msg: fmt.Sprintf("no answer from %s within %s (a direct call is not retried): %v", subj, timeout, err)}
	}
}

// liveContract looks the agent up in the registry, briefly.
func liveContract(ctx context.Context, m *mesh, agent string) (schemas.AgentContract, bool) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	reg, err := client.NewRegistry(ctx, m.Res.Agents)
	if err != nil {
		return schemas.AgentContract{}, false
	}
	defer reg.Stop()
	info, ok := reg.Lookup(agent)
	return info.Contract, ok
}

func parseParams(kvs []string) (map[string]any, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := map[string]any{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("--param %q: write k=v, e.g. --param op=upper", kv)
		}
		var j any
		if err := json.Unmarshal([]byte(v), &j); err == nil {
			out[k] = j
		} else {
			out[k] = v
		}
	}
	return out, nil
}

// parseInput reads one --input name=VALUE against the live contract, when known.
func parseInput(kv string, c schemas.AgentContract) (string, schemas.TypedValue, error) {
	name, v, ok := strings.Cut(kv, "=")
	if !ok || name == "" || v == "" {
		return "", schemas.TypedValue{}, usagef("--input %q: write name=ID,ID... or name=@FILE", kv)
	}
	decl, declared := c.Input(name)
	if strings.HasPrefix(v, "@") {
		var (
			b   []byte
			err error
		)
		if v == "@-" {
			b, err = io.ReadAll(os.Stdin)
		} else {
			b, err = os.ReadFile(v[1:])
		}
		if err != nil {
			return "", schemas.TypedValue{}, fmt.Errorf("--input %s: %w", name, err)
		}
		return name, schemas.TextValue(string(b), "cli"), nil
	}
	if declared && decl.DataType == schemas.TypeText {
		return name, schemas.TextValue(v, "cli"), nil
	}
	if declared && decl.DataType != schemas.TypeFileIDs {
		return "", schemas.TypedValue{}, fmt.Errorf("--input %s: %s declares it %s; the CLI builds FILE_IDS and TEXT inputs only", name, c.Name, decl.DataType)
	}
	ids := slices.DeleteFunc(strings.Split(v, ","), func(s string) bool { return strings.TrimSpace(s) == "" })
	for i := range ids {
		ids[i] = strings.TrimSpace(ids[i])
	}
	if len(ids) == 0 {
		return "", schemas.TypedValue{}, usagef("--input %q: no file ids", kv)
	}
	hint := decl.ContentTypeHint
	if hint == "" {
		hint = schemas.ContentMixed
	}
	return name, schemas.FilesValue(schemas.FromIDs(hint, ids...), "cli"), nil
}

// printResult writes a readable result: status, summary and each output
// as printViews shows it, never a raw id list.
func printResult(a *app, v *viewer, taskID, source string, r schemas.AgentResult) {
	status := "completed"
	if !r.Success {
		status = "failed"
	}
	fmt.Fprintf(a.out, "%s %s task %s in %dms (attempt %d, %s)\n", r.Agent, status, taskID, r.Metrics.DurationMS, max(r.Metrics.Attempt, 1), source)
	if r.Summary != "" {
		fmt.Fprintf(a.out, "  summary: %s\n", r.Summary)
	}
	if r.Error != nil {
		fmt.Fprintf(a.out, "  error: %s: %s\n", r.Error.Code, r.Error.Message)
	}
	if m := r.Metrics; m.Tokens != (schemas.Tokens{}) || m.Cost > 0 {
		fmt.Fprintf(a.out, "  used: %d prompt + %d completion tokens · $%.4f · model %s\n", m.Tokens.Prompt, m.Tokens.Completion, m.Cost, time.Duration(m.ModelMS)*time.Millisecond)
	}
	printViews(a.out, "  ", v.views(r.Outputs))
}
