package a2a

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/schemas"
)

// RemoteOption configures a Remote.
type RemoteOption func(*remoteConfig)

type remoteConfig struct {
	name       string
	capability string
	timeout    time.Duration
	hc         *http.Client
	poll       time.Duration
	files      RemoteFiles
}

// WithRemoteName names the mesh agent (default: the card's name without
// the characters an agent name may not hold).
func WithRemoteName(n string) RemoteOption { return func(c *remoteConfig) { c.name = n } }

// WithRemoteCapability sets the contract's capability (default GENERATION).
func WithRemoteCapability(capability string) RemoteOption {
	return func(c *remoteConfig) { c.capability = capability }
}

// WithRemoteTimeout sets the contract's time budget of a task (default 5m).
func WithRemoteTimeout(d time.Duration) RemoteOption { return func(c *remoteConfig) { c.timeout = d } }

// WithHTTPClient calls the remote agent with hc.
func WithHTTPClient(hc *http.Client) RemoteOption { return func(c *remoteConfig) { c.hc = hc } }

// Remote is a remote A2A agent as a mesh agent (agents.Agent): its
// contract comes from the agent card, and each task is forwarded with
// SendMessage.
type Remote struct {
	client   *Client
	contract schemas.AgentContract
	poll     time.Duration
	files    RemoteFiles // nil: no file input or output
}

var notNameChar = regexp.MustCompile(`[^A-Za-z0-9_-]+`)
var semver = regexp.MustCompile(`^\d+\.\d+\.\d+$`)

// NewRemote fetches the card at u (the agent's base URL or its card's URL)
// and returns the mesh agent that forwards to it. The contract has one
// optional TEXT input "text" (a task without it sends its instruction) and
// one TEXT output "text"; the description lists the card's skills.
// Options: WithRemoteName, WithRemoteCapability, WithRemoteTimeout,
// WithHTTPClient, WithRemoteFiles.
func NewRemote(ctx context.Context, u string, opts ...RemoteOption) (*Remote, error) {
	cfg := remoteConfig{capability: schemas.CapGeneration, timeout: 5 * time.Minute, poll: 500 * time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	cl, err := Dial(ctx, cfg.hc, u)
	if err != nil {
		return nil, err
	}
	c := ContractFromCard(cl.Card(), cfg.name, cfg.capability)
	c.TimeoutMS = cfg.timeout.Milliseconds()
	if cfg.files != nil {
		c = withFiles(c)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%w: the contract made from the card at %s: %w (name the agent with --name)", ErrNoCard, u, err)
	}
	return &Remote{client: cl, contract: c, poll: cfg.poll, files: cfg.files}, nil
}

// ContractFromCard derives a mesh contract from an agent card: name (or the
// card's name cleaned up), capability, and a description that carries the
// card's skills.
func ContractFromCard(card AgentCard, name, capability string) schemas.AgentContract {
	if name == "" {
		name = notNameChar.ReplaceAllString(card.Name, "")
	}
	var b strings.Builder
	b.WriteString(strings.TrimSpace(card.Description))
	if b.Len() == 0 {
		b.WriteString("A remote A2A agent.")
	}
	for _, s := range card.Skills {
		fmt.Fprintf(&b, "\nSkill %s: %s", s.Name, strings.TrimSpace(s.Description))
		if len(s.Examples) > 0 {
			fmt.Fprintf(&b, " (e.g. %q)", s.Examples[0])
		}
	}
	c := schemas.AgentContract{
		Name:        name,
		Capability:  capability,
		Description: b.String(),
		Inputs:      []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Description: "the message to send (default: the task's instruction)"}},
		Outputs:     []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText, Description: "the text of the agent's answer and artifacts"}},
	}
	if semver.MatchString(card.Version) {
		c.Version = card.Version
	}
	return c
}

// Contract returns the contract derived from the card.
func (r *Remote) Contract() schemas.AgentContract { return r.contract }

// Client returns the client of the remote agent.
func (r *Remote) Client() *Client { return r.client }

// Execute sends the task's text (and files) as a message and waits for the
// remote task to end, asking the agent to cancel it when ctx ends first.
func (r *Remote) Execute(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
	text := ec.Instruction()
	if ec.Has("text") {
		t, err := ec.Text("text")
		if err != nil {
			return schemas.AgentResult{}, err
		}
		text = t
	}
	var parts []Part
	if strings.TrimSpace(text) != "" {
		parts = append(parts, TextPart(text))
	}
	files, err := r.fileParts(ctx, ec)
	if err != nil {
		return schemas.AgentResult{}, err
	}
	parts = append(parts, files...)
	if len(parts) == 0 {
		return schemas.AgentResult{}, fmt.Errorf("%s: nothing to send: give the task a text input, files or an instruction", r.contract.Name)
	}
	msg := &Message{MessageID: uuid.NewString(), Role: RoleUser, Parts: parts}
	// Return at once and poll, so that a cancel can always name the task.
	res, err := r.client.SendMessage(ctx, SendMessageRequest{Message: msg, Configuration: &SendMessageConfiguration{ReturnImmediately: true}})
	if err != nil {
		return schemas.AgentResult{}, err
	}
	answer := res.Message
	if res.Task != nil {
		t, err := r.settle(ctx, *res.Task)
		if err != nil {
			return schemas.AgentResult{}, err
		}
		answer = &Message{Parts: answerParts(t)}
	}
	outputs, summary, err := r.outputs(ctx, answer.Parts)
	if err != nil {
		return schemas.AgentResult{}, err
	}
	return schemas.AgentResult{Success: true, Summary: summary, Outputs: outputs}, nil
}

// settle waits for t to end, polling at growing intervals up to r.poll,
// and returns it; a task that did not complete is an error.
func (r *Remote) settle(ctx context.Context, t Task) (Task, error) {
	wait := 20 * time.Millisecond
	for !t.Status.State.Terminal() && !t.Status.State.Interrupted() {
		select {
		case <-ctx.Done():
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_, cerr := r.client.CancelTask(cctx, t.ID)
			cancel()
			return t, errors.Join(context.Cause(ctx), cerr)
		case <-time.After(wait):
		}
		wait = min(2*wait, r.poll)
		prev := t.Status
		var err error
		if t, err = r.client.GetTask(ctx, t.ID); err != nil {
			return t, err
		}
		if t.Status.Message != nil && t.Status.Timestamp != prev.Timestamp { // the remote's progress is the task's
			agents.ReportProgress(ctx, schemas.Clip(partsText(t.Status.Message.Parts), 200), 0)
		}
	}
	if t.Status.State != StateCompleted {
		var status string
		if t.Status.Message != nil {
			status = partsText(t.Status.Message.Parts)
		}
		return t, fmt.Errorf("%w: task %s ended %s: %s", ErrRemote, t.ID, t.Status.State, status)
	}
	return t, nil
}

// answerParts is what a completed task answered: its artifacts' parts,
// else its status message's.
func answerParts(t Task) []Part {
	var parts []Part
	for _, a := range t.Artifacts {
		parts = append(parts, a.Parts...)
	}
	if len(parts) == 0 && t.Status.Message != nil {
		parts = t.Status.Message.Parts
	}
	return parts
}

// partsText joins the text of text parts and the JSON of data parts.
func partsText(parts []Part) string {
	var out []string
	for _, p := range parts {
		switch {
		case p.Text != nil:
			out = append(out, *p.Text)
		case p.Data != nil:
			out = append(out, string(p.Data))
		}
	}
	return strings.Join(out, "\n")
}
