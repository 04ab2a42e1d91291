package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The packages an agent or client program imports, and this program (the
// README's agent).
var sdkRoots = []string{
	"github.com/agentmesh/agentmesh/agents",
	"github.com/agentmesh/agentmesh/client",
	"github.com/agentmesh/agentmesh/examples/goagent",
}

// The built-in agents are checked too; the prompt agent is the one that
// talks to an LLM, so it alone may link an LLM client.
const (
	builtinAgents = "github.com/agentmesh/agentmesh/agents/builtin/..."
	llmAgent      = "github.com/agentmesh/agentmesh/agents/builtin/prompt"
)

// Who may link a heavy package.
const (
	nobody  = iota // no agent or client program
	llmOnly        // only the LLM agent
	builtin        // built-in agents may (their own work needs it), the SDK may not
)

// heavy lists what an agent or client program must not link, by import
// path (the package and those below it; a path ending in "/" is a folder
// of modules), with where it belongs instead.
var heavy = []struct {
	prefix, why string
	allowed     int
}{
	{"github.com/nats-io/nats-server/", "the NATS server: only bus/embedded (agentmesh server/up, tests) links it", nobody},
	{"github.com/agentmesh/agentmesh/bus/embedded", "the in-process NATS server", nobody},
	{"go.opentelemetry.io/otel/sdk", "the OpenTelemetry SDK: agents use the API only; telemetry/export installs the SDK in the agentmesh command", nobody},
	{"go.opentelemetry.io/otel/exporters/", "an OpenTelemetry exporter: only telemetry/export links one", nobody},
	{"github.com/agentmesh/agentmesh/telemetry/export", "the OpenTelemetry SDK and exporter", nobody},
	{"google.golang.org/grpc", "gRPC: nothing on the agent path speaks it", nobody},
	{"github.com/prometheus/client_golang", "Prometheus metrics: only observe/metrics links them", nobody},
	{"github.com/agentmesh/agentmesh/orchestrator", "the orchestrator", nobody},
	{"github.com/agentmesh/agentmesh/gateway", "the HTTP gateway", nobody},
	{"github.com/getkin/kin-openapi", "OpenAPI: only the gateway links it", nobody},
	{"github.com/modelcontextprotocol/", "MCP: only its bridge links it", nobody},
	{"github.com/chromedp/", "a browser driver: only tests link it", nobody},
	{"github.com/sashabaranov/go-openai", "an LLM client: only the LLM agent (agents/builtin/prompt) and the orchestrator link one", llmOnly},
	{"github.com/anthropics/", "an LLM client: only the LLM agent and the orchestrator link one", llmOnly},
	{"github.com/agentmesh/agentmesh/llm", "the LLM client: only the LLM agent and the orchestrator link it; other agents take an llmiface model", llmOnly},
	{"github.com/ledongthuc/pdf", "PDF extraction: only the built-in file agents link it", builtin},
	{"github.com/santhosh-tekuri/jsonschema", "a general-purpose JSON Schema library: package schemas validates with its own (validator.go); the library checks it in tests only", nobody},
	{"golang.org/x/text/message", "localized messages (what that JSON Schema library linked): problems are plain English", nobody},
}

// TestSDKLinksNoServer checks the import graph of agents, client, the
// README's agent and the built-in agents: none reaches the NATS server, an
// LLM client it does not use, the OpenTelemetry SDK or another heavy
// dependency. A failure names the chain of imports that pulls the package
// in.
func TestSDKLinksNoServer(t *testing.T) {
	list := func(args ...string) string {
		out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
		}
		return string(out)
	}
	builtins := strings.Fields(list(builtinAgents))
	imports := map[string][]string{}
	graph := list(append([]string{"-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}"}, append(sdkRoots, builtins...)...)...)
	for line := range strings.Lines(graph) {
		if f := strings.Fields(line); len(f) > 0 {
			imports[f[0]] = f[1:]
		}
	}
	if len(builtins) < 5 {
		t.Fatalf("go list %s found only %v", builtinAgents, builtins)
	}
	check := func(root string, allowed func(int) bool) {
		if _, ok := imports[root]; !ok {
			t.Fatalf("go list did not list %s", root)
		}
		for _, h := range heavy {
			if allowed(h.allowed) {
				continue
			}
			if chain := importChain(imports, root, h.prefix); chain != nil {
				t.Errorf("%s links %s (%s) through %s; move that import behind a package %s does not import",
					root, chain[len(chain)-1], h.why, strings.Join(chain, " -> "), root)
			}
		}
	}
	for _, root := range sdkRoots {
		check(root, func(int) bool { return false })
	}
	for _, root := range builtins {
		check(root, func(a int) bool { return a == builtin || (a == llmOnly && root == llmAgent) })
	}
}

// importChain returns the shortest chain of imports from root to a
// package under prefix, or nil when root reaches none.
func importChain(imports map[string][]string, root, prefix string) []string {
	from := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if under(p, prefix) {
			var chain []string
			for ; p != ""; p = from[p] {
				chain = append([]string{p}, chain...)
			}
			return chain
		}
		for _, q := range imports[p] {
			if _, seen := from[q]; !seen {
				from[q] = p
				queue = append(queue, q)
			}
		}
	}
	return nil
}

// under reports whether package p is prefix or below it; a prefix ending
// in "/" is a folder of modules.
func under(p, prefix string) bool {
	if strings.HasSuffix(prefix, "/") {
		return strings.HasPrefix(p, prefix)
	}
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}

// maxAgentBytes bounds the README's agent built with plain "go build"
// (debug information kept), with room for the runtime to grow. It was
// 13.6 MB while agents linked the NATS server, 12.5 MB without it, and
// 11.7 MB once package schemas validated with its own JSON Schema
// validator instead of a library that linked golang.org/x/text. A program
// of nats.go with jetstream and micro alone is 9.6 MB.
const maxAgentBytes = 12_000_000

// TestREADMEAgentSize builds the README's agent as a user would and
// reports its size.
func TestREADMEAgentSize(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "goagent")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the README's agent: %d bytes (%.1f MB)", fi.Size(), float64(fi.Size())/1e6)
	if fi.Size() > maxAgentBytes {
		t.Errorf("the README's agent is %d bytes, over %d: see what TestSDKLinksNoServer reports, or 'go list -deps .' for what it links", fi.Size(), maxAgentBytes)
	}
}
