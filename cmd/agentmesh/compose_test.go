package main

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestComposeFile checks compose.yaml the way `docker compose config` would
// read it (no Docker engine runs here): NATS with JetStream and a volume, the
// orchestrator, and one service per built-in agent named exactly as
// `agentmesh agent NAME` expects, with ImageSearch and Analysis replicated.
func TestComposeFile(t *testing.T) {
	raw, err := os.ReadFile("../../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Build       string            `yaml:"build"`
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
			Volumes     []string          `yaml:"volumes"`
			Deploy      struct {
				Replicas int `yaml:"replicas"`
			} `yaml:"deploy"`
		} `yaml:"services"`
		Volumes map[string]any `yaml:"volumes"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("compose.yaml is not valid YAML: %v", err)
	}
	nats, ok := doc.Services["nats"]
	if !ok || !strings.HasPrefix(nats.Image, "nats:") {
		t.Fatalf("no nats service on the official image: %+v", nats)
	}
	if !strings.Contains(strings.Join(nats.Command, " "), "--jetstream") || len(nats.Volumes) == 0 {
		t.Errorf("nats must run with --jetstream and a volume: %+v", nats)
	}
	orch, ok := doc.Services["orchestrator"]
	if !ok || len(orch.Command) == 0 || orch.Command[0] != "orchestrator" {
		t.Errorf("orchestrator service missing or wrong command: %+v", orch)
	}
	if orch.Environment["NATS_URL"] != "${NATS_URL:-nats://nats:4222}" {
		t.Errorf("orchestrator NATS_URL = %q", orch.Environment["NATS_URL"])
	}
	for _, name := range builtinNames() {
		svc, ok := doc.Services[name]
		if !ok {
			t.Errorf("built-in agent %s has no service", name)
			continue
		}
		if strings.Join(svc.Command, " ") != "agent "+name {
			t.Errorf("%s command = %v, want [agent %s]", name, svc.Command, name)
		}
		for _, env := range []string{"NATS_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "AGENTMESH_MODEL"} {
			if _, ok := svc.Environment[env]; !ok {
				t.Errorf("%s lacks %s in its environment", name, env)
			}
		}
	}
	// The mesh starts with the samples, as up does.
	if cmd := strings.Join(doc.Services["samples"].Command, " "); cmd != "files samples" {
		t.Errorf("samples service command = %q, want \"files samples\" (compose starts with the samples, as up does)", cmd)
	}
	for _, name := range []string{"ImageSearchAgent", "AnalysisAgent"} {
		if r := doc.Services[name].Deploy.Replicas; r != 2 {
			t.Errorf("%s deploy.replicas = %d, want 2", name, r)
		}
	}
}

// TestComposeConfig has Docker Compose itself read compose.yaml
// (`docker compose config`, or the docker-compose tool that CI installs);
// no Docker engine is needed for that.
func TestComposeConfig(t *testing.T) {
	var cmd *exec.Cmd
	switch {
	case exec.Command("docker", "compose", "version").Run() == nil:
		cmd = exec.Command("docker", "compose", "-f", "../../compose.yaml", "config", "-q")
	case lookPath("docker-compose"):
		cmd = exec.Command("docker-compose", "-f", "../../compose.yaml", "config", "-q")
	default:
		t.Skip("neither 'docker compose' nor 'docker-compose' is installed (.ci/run installs docker-compose)")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v rejects compose.yaml: %v\n%s", cmd.Args, err, out)
	}
}

func lookPath(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

// TestComposePinsNATSAndWaitsForIt: the NATS image is the version of the
// server `up` embeds (go.mod), NATS has a healthcheck the services wait for,
// the services retry their first connection, and .dockerignore keeps local
// data and VCS out of the build context.
func TestComposePinsNATSAndWaitsForIt(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`github\.com/nats-io/nats-server/v2 v(\d+\.\d+\.\d+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod does not require github.com/nats-io/nats-server/v2")
	}
	raw, err := os.ReadFile("../../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Environment map[string]string `yaml:"environment"`
			Healthcheck struct {
				Test []string `yaml:"test"`
			} `yaml:"healthcheck"`
			DependsOn map[string]struct {
				Condition string `yaml:"condition"`
			} `yaml:"depends_on"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	nats := doc.Services["nats"]
	if want := "nats:" + string(m[1]) + "-alpine"; nats.Image != want {
		t.Errorf("nats image %q, want %q (the embedded server's version in go.mod)", nats.Image, want)
	}
	if hc := strings.Join(nats.Healthcheck.Test, " "); !strings.Contains(hc, ":8222/healthz") {
		t.Errorf("nats healthcheck %q does not ask the server's /healthz", hc)
	}
	for name, svc := range doc.Services {
		if strings.HasPrefix(svc.Image, "nats:") {
			// A NATS server: the single one, or a node of the cluster
			// profile, on the same pinned image.
			if svc.Image != nats.Image {
				t.Errorf("%s runs %s, want %s like nats", name, svc.Image, nats.Image)
			}
			continue
		}
		if svc.Image != "agentmesh:latest" {
			continue // the metrics profile's exporter, Prometheus and Grafana
		}
		if svc.DependsOn["nats"].Condition != "service_healthy" {
			t.Errorf("%s does not wait for NATS to be healthy: %+v", name, svc.DependsOn)
		}
		for _, env := range []string{"AGENTMESH_CONNECT_WAIT", "AGENTMESH_TASK_MAX_AGE", "AGENTMESH_RUNS_TTL", "AGENTMESH_CONVERSATIONS_TTL"} {
			if svc.Environment[env] == "" {
				t.Errorf("%s lacks %s", name, env)
			}
		}
	}
	ignore, err := os.ReadFile("../../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(ignore))
	for _, want := range []string{".git", ".agentmesh", "**/node_modules"} {
		if !slices.Contains(lines, want) {
			t.Errorf(".dockerignore does not exclude %s", want)
		}
	}
}
