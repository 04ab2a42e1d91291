package layers_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/agentmesh/agentmesh/"

// The layers, from the bottom: a package may import the packages of its
// own layer (as its own rules allow) and those below, never those above.
//
//	schemas                      the vocabulary: no other package of the mesh
//	pipelinespec                 pipeline specs, their checks and waves: schemas
//	                               only; no agent imports it
//	bus, telemetry, resolvers,   the wire and the stores: schemas only
//	  llm, security
//	internal/meshcore,           what agents, the orchestrator and the mesh's
//	  internal/pipespec            services share: dispatching, the registry,
//	                               following events; reading pipeline specs
//	agents, orchestrator/...     the two sides of the mesh: they meet only
//	                               through the layers below
//	client, internal/stateview,  the facade for programs outside the mesh, and
//	  observe/...                  the read-only view of state
//	gateway, bridge/...          services over the facade and the view
//	cmd/...                      wires everything
//
// Each rule forbids a package and those below it (or, for "x/", those
// below x alone) to import another.
var forbidden = []struct {
	from, to string // import paths without the module; "x/" is every package below x
	why      string
}{
	{"schemas", "", "schemas is the vocabulary: it imports no other package of the mesh"},
	{"pipelinespec", "!schemas", "pipelinespec is pipeline specs as values: it imports the vocabulary alone"},
	{"agents", "pipelinespec", "an agent speaks the vocabulary of tasks and results; pipeline specs are the orchestrator's and clients'"},
	// internal/fixture (values and the one wait; it imports schemas alone)
	// is there for bus/bustest, the bus's test rig.
	{"bus", "!schemas internal/fixture", "bus knows no agents, orchestrator or client: it imports schemas alone"},
	{"internal/meshcore", "!schemas bus telemetry", "meshcore sits under agents and the orchestrator: the wire packages only"},
	{"internal/pipespec", "!schemas pipelinespec", "pipespec reads specs: the vocabulary and the spec types only"},
	{"internal/memory", "!schemas bus internal/rank", "memory sits under the chat loop, the CLI and the dashboard: the wire and the ranking only"},
	{"internal/rank", "", "rank is ranking alone (the knowledge agent's and the chat loop's memory): it imports no other package of the mesh"},
	{"agents", "client", "agents and the orchestrator meet through internal/meshcore, not the facade"},
	{"agents", "orchestrator", "agents and the orchestrator meet only through schemas, bus and internal/meshcore"},
	{"orchestrator", "client", "the orchestrator uses internal/meshcore and internal/pipespec, not the facade"},
	{"orchestrator", "agents", "agents and the orchestrator meet only through schemas, bus and internal/meshcore"},
	{"client", "agents orchestrator gateway bridge llm", "client is the facade: the wire, meshcore and pipespec only"},
	{"observe/", "client orchestrator agents gateway", "observers take the registry from internal/meshcore"},
	{"gateway", "orchestrator agents", "the gateway reads state through internal/stateview and sends through client"},
	{"bridge/", "orchestrator gateway", "the bridges read state through internal/stateview and send through client"},
	{"cmd", "orchestrator/state", "the CLI reads state through internal/stateview, as the gateway does"},
	{"", "cmd", "only cmd wires: nothing imports it"},
}

// pending are edges against a rule that are known and not yet removed,
// each with what removing it takes. The list only shrinks.
var pending = map[string]string{}

// under reports whether pkg is p, or below p when p ends in "/", or
// anything at all when p is empty.
func under(pkg, p string) bool {
	switch {
	case p == "":
		return true
	case strings.HasSuffix(p, "/"):
		return strings.HasPrefix(pkg, p)
	}
	return pkg == p || strings.HasPrefix(pkg, p+"/")
}

// TestLayers lists the imports of every package of the module (tests
// aside: a test may use a rig from any layer) and fails on each that goes
// against a rule, naming the rule.
func TestLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := map[string]bool{}
	n := 0
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], module) {
			continue
		}
		n++
		from := strings.TrimPrefix(f[0], module)
		for _, imp := range f[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			to := strings.TrimPrefix(imp, module)
			for _, r := range forbidden {
				if !under(from, r.from) || !breaks(r.from, to, r.to) {
					continue
				}
				edge := from + " -> " + to
				if seen[edge] {
					continue
				}
				seen[edge] = true
				if _, ok := pending[edge]; !ok {
					t.Errorf("%s: %s", edge, r.why)
				}
			}
		}
	}
	if n < 40 {
		t.Fatalf("go list found %d packages of the module; want them all", n)
	}
	for edge, why := range pending {
		if !seen[edge] {
			t.Errorf("%s is gone: remove it from pending (%s)", edge, why)
		}
	}
}

// breaks reports whether an import of to by a package the rule's from
// covers goes against targets: import paths (each with what is below it),
// or, after "!", the only paths allowed. The packages from covers may
// always import each other. An empty targets forbids every other package.
func breaks(from, to, targets string) bool {
	if from != "" && under(to, strings.TrimSuffix(from, "/")) {
		return false // within the rule's own folder
	}
	if targets == "" {
		return true
	}
	if only, ok := strings.CutPrefix(targets, "!"); ok {
		for _, p := range strings.Fields(only) {
			if under(to, p) {
				return false
			}
		}
		return true
	}
	for _, p := range strings.Fields(targets) {
		if under(to, p) {
			return true
		}
	}
	return false
}

// pure are packages whose tests are pure logic: neither they nor their
// tests link the NATS server (their fixtures come from internal/fixture,
// not from the mesh rig).
var pure = []string{"orchestrator/route", "internal/fixture", "internal/pipespec", "schemas", "pipelinespec"}

// TestPureTestsLinkNoServer checks that the tests of the pure packages do
// not link the embedded NATS server.
func TestPureTestsLinkNoServer(t *testing.T) {
	for _, p := range pure {
		out, err := exec.Command("go", "list", "-deps", "-test", module+p).Output()
		if err != nil {
			t.Fatalf("go list -deps -test %s: %v", p, err)
		}
		if strings.Contains(string(out), "github.com/nats-io/nats-server/") {
			t.Errorf("the tests of %s link the NATS server: take fixtures from internal/fixture, not internal/meshtest", p)
		}
	}
}
