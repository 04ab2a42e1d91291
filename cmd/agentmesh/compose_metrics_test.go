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

// TestComposeMetricsProfile: every agentmesh service serves metrics, the
// metrics profile (and only it) runs Prometheus, the NATS exporter and
// Grafana, Prometheus scrapes every agentmesh service on the port they
// serve, and the provisioned dashboard shows every metric of the mesh.
func TestComposeMetricsProfile(t *testing.T) {
	raw, err := os.ReadFile("../../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Profiles    []string          `yaml:"profiles"`
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
			Volumes     []string          `yaml:"volumes"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var meshServices []string
	var port string
	for name, svc := range doc.Services {
		if svc.Image != "agentmesh:latest" {
			continue
		}
		meshServices = append(meshServices, name)
		addr := strings.TrimSuffix(strings.TrimPrefix(svc.Environment[envMetricsAddr], "${"+envMetricsAddr+":-"), "}")
		_, p, err := net.SplitHostPort(addr)
		if err != nil || (port != "" && p != port) {
			t.Errorf("%s: %s=%q, want one HOST:PORT shared by every service", name, envMetricsAddr, svc.Environment[envMetricsAddr])
		}
		port = p
	}
	for _, name := range []string{"prometheus", "grafana", "nats-exporter"} {
		if !slices.Equal(doc.Services[name].Profiles, []string{"metrics"}) {
			t.Errorf("%s profiles = %v, want [metrics]", name, doc.Services[name].Profiles)
		}
	}
	if cmd := strings.Join(doc.Services["nats-exporter"].Command, " "); !strings.Contains(cmd, "http://nats:8222") {
		t.Errorf("nats-exporter does not read the NATS monitoring port: %s", cmd)
	}

	promRaw, err := os.ReadFile("../../deploy/prometheus/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	var prom struct {
		ScrapeConfigs []struct {
			JobName      string `yaml:"job_name"`
			DNSSDConfigs []struct {
				Names []string `yaml:"names"`
				Type  string   `yaml:"type"`
				Port  int      `yaml:"port"`
			} `yaml:"dns_sd_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(promRaw, &prom); err != nil {
		t.Fatalf("deploy/prometheus/prometheus.yml: %v", err)
	}
	scraped := map[string]bool{}
	for _, sc := range prom.ScrapeConfigs {
		for _, d := range sc.DNSSDConfigs {
			for _, n := range d.Names {
				scraped[n] = d.Type == "A" && port != "" && port == strconv.Itoa(d.Port)
			}
		}
	}
	for _, name := range meshServices {
		if !scraped[name] {
			t.Errorf("Prometheus does not scrape service %s on port %s (dns_sd_configs type A)", name, port)
		}
	}
	if !slices.ContainsFunc(doc.Services["prometheus"].Volumes, func(v string) bool { return strings.HasPrefix(v, "./deploy/prometheus/prometheus.yml:") }) {
		t.Errorf("prometheus does not mount deploy/prometheus/prometheus.yml: %v", doc.Services["prometheus"].Volumes)
	}

	dashRaw, err := os.ReadFile("../../deploy/grafana/dashboards/agentmesh.json")
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
	if err := json.Unmarshal(dashRaw, &dash); err != nil || dash.UID == "" {
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
