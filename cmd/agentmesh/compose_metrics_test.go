package main

import (
	"encoding/json"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/agentmesh/agentmesh/observe/metrics"
)

// composeServices reads the services of compose.yaml.
func composeServices(t *testing.T) map[string]composeService {
	t.Helper()
	raw, err := os.ReadFile("../../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]composeService `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Services
}

type composeService struct {
	Image       string            `yaml:"image"`
	Profiles    []string          `yaml:"profiles"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	Restart     string            `yaml:"restart"`
}

// meshMetricsPort returns the port every agentmesh service of compose.yaml
// serves metrics on, and the services.
func meshMetricsPort(t *testing.T, services map[string]composeService) (port string, names []string) {
	t.Helper()
	for name, svc := range services {
		if svc.Image != "agentmesh:latest" || svc.Restart == "on-failure" {
			continue // not agentmesh, or a one-shot job (samples) that exits
		}
		names = append(names, name)
		addr := strings.TrimSuffix(strings.TrimPrefix(svc.Environment[envMetricsAddr], "${"+envMetricsAddr+":-"), "}")
		_, p, err := net.SplitHostPort(addr)
		if err != nil || (port != "" && p != port) {
			t.Errorf("%s: %s=%q, want one HOST:PORT shared by every service", name, envMetricsAddr, svc.Environment[envMetricsAddr])
		}
		port = p
	}
	return port, names
}

// TestComposeMetricsProfile: every agentmesh service serves metrics, and
// the metrics profile (only it) runs Prometheus with the repository's
// configuration, the NATS exporter reading the NATS monitoring port, and
// Grafana.
func TestComposeMetricsProfile(t *testing.T) {
	services := composeServices(t)
	if port, _ := meshMetricsPort(t, services); port == "" {
		t.Fatalf("no agentmesh service sets %s", envMetricsAddr)
	}
	for _, name := range []string{"prometheus", "grafana", "nats-exporter"} {
		if !slices.Equal(services[name].Profiles, []string{"metrics"}) {
			t.Errorf("%s profiles = %v, want [metrics]", name, services[name].Profiles)
		}
	}
	if cmd := strings.Join(services["nats-exporter"].Command, " "); !strings.Contains(cmd, "http://nats:8222") {
		t.Errorf("nats-exporter does not read the NATS monitoring port: %s", cmd)
	}
	if !slices.ContainsFunc(services["prometheus"].Volumes, func(v string) bool { return strings.HasPrefix(v, "./deploy/prometheus/prometheus.yml:") }) {
		t.Errorf("prometheus does not mount deploy/prometheus/prometheus.yml: %v", services["prometheus"].Volumes)
	}
	if !slices.ContainsFunc(services["grafana"].Volumes, func(v string) bool { return strings.HasPrefix(v, "./deploy/grafana/dashboards:") }) {
		t.Errorf("grafana does not mount deploy/grafana/dashboards: %v", services["grafana"].Volumes)
	}
}

// TestPrometheusScrapesEveryService: deploy/prometheus/prometheus.yml finds
// every agentmesh service of compose.yaml by DNS on the port it serves.
func TestPrometheusScrapesEveryService(t *testing.T) {
	port, names := meshMetricsPort(t, composeServices(t))
	raw, err := os.ReadFile("../../deploy/prometheus/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	var prom struct {
		ScrapeConfigs []struct {
			DNSSDConfigs []struct {
				Names []string `yaml:"names"`
				Type  string   `yaml:"type"`
				Port  int      `yaml:"port"`
			} `yaml:"dns_sd_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(raw, &prom); err != nil {
		t.Fatalf("deploy/prometheus/prometheus.yml: %v", err)
	}
	scraped := map[string]bool{}
	for _, sc := range prom.ScrapeConfigs {
		for _, d := range sc.DNSSDConfigs {
			for _, n := range d.Names {
				scraped[n] = d.Type == "A" && port == strconv.Itoa(d.Port)
			}
		}
	}
	for _, name := range names {
		if !scraped[name] {
			t.Errorf("Prometheus does not scrape service %s on port %s (dns_sd_configs type A)", name, port)
		}
	}
}

// TestDashboardShowsEveryMetric: the provisioned Grafana dashboard has a
// query on every metric the mesh exports.
func TestDashboardShowsEveryMetric(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/grafana/dashboards/agentmesh.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID    string `json:"uid"`
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil || dash.UID == "" {
		t.Fatalf("dashboard JSON: %v (uid %q)", err, dash.UID)
	}
	var exprs []string
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	all := strings.Join(exprs, "\n")
	for _, name := range metrics.Names() {
		if !strings.Contains(all, name) {
			t.Errorf("the dashboard shows no %s", name)
		}
	}
}
