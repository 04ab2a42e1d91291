package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/schemas"
)

// Remote is a session with an MCP server whose tools become mesh agents
// (Agents), one agent per tool. It is safe for concurrent use: the agents
// share the session, and each call carries its own progress token.
type Remote struct {
	session *mcp.ClientSession
	prefix  string
	log     *slog.Logger

	progress sync.Map      // progress token -> context.Context of the task calling
	changed  chan struct{} // a tools/list_changed came (buffered 1)
}

// RemoteOption configures a Remote.
type RemoteOption func(*Remote)

// WithPrefix puts prefix before every tool's name to make its agent's
// name, so two servers with a tool of the same name can share a mesh.
func WithPrefix(prefix string) RemoteOption { return func(r *Remote) { r.prefix = prefix } }

// WithRemoteLogger sets the logger (default: discard).
func WithRemoteLogger(l *slog.Logger) RemoteOption { return func(r *Remote) { r.log = l } }

// CommandTransport starts the MCP server command line (words split on
// spaces; single or double quotes keep spaces in a word) and speaks MCP on
// its stdin and stdout; its stderr goes to stderr.
func CommandTransport(commandLine string) (mcp.Transport, error) {
	words, err := SplitCommand(commandLine)
	if err != nil {
		return nil, err
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("--mcp %q: name the MCP server's command, e.g. --mcp 'node server.mjs'", commandLine)
	}
	cmd := exec.Command(words[0], words[1:]...)
	cmd.Stderr = os.Stderr
	return &mcp.CommandTransport{Command: cmd}, nil
}

// HTTPTransport speaks MCP's streamable HTTP transport to url.
func HTTPTransport(url string) mcp.Transport {
	return &mcp.StreamableClientTransport{Endpoint: url}
}

// Dial opens a session with the MCP server on t. Options: WithPrefix,
// WithRemoteLogger.
func Dial(ctx context.Context, t mcp.Transport, opts ...RemoteOption) (*Remote, error) {
	r := &Remote{log: slog.New(slog.NewTextHandler(io.Discard, nil)), changed: make(chan struct{}, 1)}
	for _, o := range opts {
		o(r)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "agentmesh", Version: "1"}, &mcp.ClientOptions{
		Logger:                      r.log,
		Capabilities:                &mcp.ClientCapabilities{},
		ProgressNotificationHandler: r.onProgress,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case r.changed <- struct{}{}:
			default:
			}
		},
	})
	s, err := c.Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting to the MCP server: %w", err)
	}
	r.session = s
	return r, nil
}

// Close ends the session (and stops a server started by CommandTransport).
func (r *Remote) Close() error { return r.session.Close() }

// ServerName is the name the server gave in its initialize result.
func (r *Remote) ServerName() string {
	if ir := r.session.InitializeResult(); ir != nil && ir.ServerInfo != nil {
		return ir.ServerInfo.Name
	}
	return ""
}

// Agents lists the server's tools and returns one agent per tool, each
// with the contract ToolContract derives. A tool whose contract cannot be
// derived is an error naming it.
func (r *Remote) Agents(ctx context.Context) ([]agents.Agent, error) {
	var out []agents.Agent
	var errs []error
	for tool, err := range r.session.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("listing the MCP server's tools: %w", err)
		}
		c, text, err := ToolContract(tool, r.prefix)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, &toolAgent{remote: r, tool: tool.Name, contract: c, text: text})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w (server %q)", ErrNoTools, r.ServerName())
	}
	return out, nil
}

// onProgress turns a progress notification of a running call into an
// io.agentmesh.task.progress event of its task.
func (r *Remote) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	v, ok := r.progress.Load(fmt.Sprint(req.Params.ProgressToken))
	if !ok {
		return
	}
	percent := 0.0
	if req.Params.Total > 0 {
		percent = 100 * req.Params.Progress / req.Params.Total
	}
	msg := req.Params.Message
	if msg == "" {
		msg = fmt.Sprintf("progress %g", req.Params.Progress)
	}
	agents.ReportProgress(v.(context.Context), msg, percent)
}

// toolAgent is the mesh agent of one MCP tool.
type toolAgent struct {
	remote   *Remote
	tool     string
	contract schemas.AgentContract
	text     TextMapping
}

func (a *toolAgent) Contract() schemas.AgentContract { return a.contract }

// Execute calls the tool with the task's params as arguments (the TEXT
// input filling the text argument when the params leave it out) and maps
// the result: isError is a failure with code agent_error, an invalid-params
// protocol error one with invalid_params, a broken session a retryable
// failure.
func (a *toolAgent) Execute(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
	args := maps.Clone(ec.Params())
	if args == nil {
		args = map[string]any{}
	}
	if arg := a.text.Argument; arg != "" {
		_, given := args[arg]
		switch {
		case !given && ec.Has(arg):
			text, err := ec.Text(arg)
			if err != nil {
				return schemas.Failure(a.contract.Name, schemas.CodeInvalidInput, err.Error(), false), nil
			}
			args[arg] = text
		case !given && a.text.Required:
			return schemas.Failure(a.contract.Name, schemas.CodeInvalidInput, fmt.Sprintf(
				"MCP tool %s needs its argument %q: give the TEXT input %q or the param %q", a.tool, arg, arg, arg), false), nil
		}
	}
	token := "am-" + uuid.NewString()
	a.remote.progress.Store(token, ctx)
	defer a.remote.progress.Delete(token)
	params := &mcp.CallToolParams{Name: a.tool, Arguments: args}
	params.SetProgressToken(token)
	res, err := a.remote.session.CallTool(ctx, params)
	if err != nil {
		if ctx.Err() != nil {
			return schemas.AgentResult{}, ctx.Err()
		}
		var werr *jsonrpc.Error
		if errors.As(err, &werr) && werr.Code == jsonrpc.CodeInvalidParams {
			return schemas.Failure(a.contract.Name, schemas.CodeInvalidParams, fmt.Sprintf("MCP tool %s refused the arguments: %s", a.tool, werr.Message), false), nil
		}
		if errors.As(err, &werr) {
			return schemas.Failure(a.contract.Name, schemas.CodeAgentError, fmt.Sprintf("MCP tool %s: %s (JSON-RPC error %d)", a.tool, werr.Message, werr.Code), false), nil
		}
		return schemas.AgentResult{}, agents.Retryable(fmt.Errorf("calling MCP tool %s: %w", a.tool, err))
	}
	text := contentText(res.Content)
	if res.IsError {
		if text == "" {
			text = "the tool reported an error without text"
		}
		return schemas.Failure(a.contract.Name, schemas.CodeAgentError, "MCP tool "+a.tool+": "+text, false), nil
	}
	outs := map[string]schemas.TypedValue{OutputText: schemas.TextValue(text, a.contract.Name)}
	if res.StructuredContent != nil && len(a.contract.Outputs) > 1 {
		v, err := schemas.NewValue(TypeJSON, res.StructuredContent, a.contract.Name)
		if err != nil {
			return schemas.Failure(a.contract.Name, schemas.CodeAgentError, "MCP tool "+a.tool+": structured content: "+err.Error(), false), nil
		}
		outs[OutputJSON] = v
	}
	return schemas.AgentResult{
		Success: true,
		Summary: fmt.Sprintf("MCP tool %s returned %s", a.tool, schemas.Plural(len([]rune(text)), "character", "characters")),
		Outputs: outs,
	}, nil
}

// contentText joins the text blocks of a result; other blocks are named
// by kind and type, since a TEXT output cannot carry them.
func contentText(content []mcp.Content) string {
	var parts []string
	for _, c := range content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s]", c.URI))
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				parts = append(parts, c.Resource.Text)
			} else if c.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource %s]", c.Resource.URI))
			}
		}
	}
	return strings.Join(parts, "\n")
}

// SplitCommand splits a command line into words at spaces and tabs; single
// or double quotes keep spaces inside a word, a backslash outside single
// quotes takes the next character literally. An unclosed quote is an error.
func SplitCommand(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote byte
	escaped := false
	// Byte by byte: every special character is ASCII, so other bytes
	// (UTF-8 or not) pass through unchanged.
	for i := 0; i < len(line); i++ {
		r := line[i]
		switch {
		case escaped:
			cur.WriteByte(r)
			escaped = false
		case r == '\\' && quote != '\'':
			escaped, inWord = true, true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteByte(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(r)
			inWord = true
		}
	}
	if quote != 0 || escaped {
		return nil, fmt.Errorf("command line %q: a quote or backslash is not closed", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
