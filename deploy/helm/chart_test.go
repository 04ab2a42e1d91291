package helm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const chart = "agentmesh"

// helmBinary is helm from $HELM or the PATH; the test skips, saying so,
// without it (.ci/run builds it).
func helmBinary(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("HELM"); h != "" {
		return h
	}
	h, err := exec.LookPath("helm")
	if err != nil {
		t.Skip("helm is not installed (nor $HELM set): the chart is not rendered; .ci/run installs helm (see docs/kubernetes.md)")
	}
	return h
}

// rendered is the manifests of one helm template run, decoded strictly.
type rendered struct {
	deployments map[string]*appsv1.Deployment
	services    map[string]*corev1.Service
	secrets     map[string]*corev1.Secret
	scaled      map[string]*ScaledObject
}

// render runs helm lint and helm template with values and decodes every
// manifest strictly: a field the type does not have fails the test.
func render(t *testing.T, values string) rendered {
	t.Helper()
	helm := helmBinary(t)
	valuesFile := filepath.Join(chart, "ci", values)
	if out, err := exec.Command(helm, "lint", "--strict", chart, "-f", valuesFile).CombinedOutput(); err != nil {
		t.Fatalf("helm lint --strict -f %s: %v\n%s", valuesFile, err, out)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(helm, "template", "am", chart, "-f", valuesFile)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template -f %s: %v\n%s", valuesFile, err, stderr.String())
	}
	r := rendered{deployments: map[string]*appsv1.Deployment{}, services: map[string]*corev1.Service{},
		secrets: map[string]*corev1.Secret{}, scaled: map[string]*ScaledObject{}}
	for i, doc := range strings.Split(string(out), "\n---") {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("manifest %d is not YAML: %v\n%s", i, err, doc)
		}
		var head struct{ APIVersion, Kind string }
		if err := json.Unmarshal(js, &head); err != nil {
			t.Fatal(err)
		}
		var dst any
		var name func() string
		switch head.APIVersion + " " + head.Kind {
		case "apps/v1 Deployment":
			d := &appsv1.Deployment{}
			dst, name = d, func() string { r.deployments[d.Name] = d; return d.Name }
		case "v1 Service":
			s := &corev1.Service{}
			dst, name = s, func() string { r.services[s.Name] = s; return s.Name }
		case "v1 Secret":
			s := &corev1.Secret{}
			dst, name = s, func() string { r.secrets[s.Name] = s; return s.Name }
		case "keda.sh/v1alpha1 ScaledObject":
			s := &ScaledObject{}
			dst, name = s, func() string { r.scaled[s.Metadata.Name] = s; return s.Metadata.Name }
		default:
			t.Fatalf("manifest %d is a %s %s, which this test does not decode: add its type\n%s", i, head.APIVersion, head.Kind, doc)
		}
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.DisallowUnknownFields()
		if err := dec.Decode(dst); err != nil {
			t.Fatalf("%s %s: %v\n%s", head.APIVersion, head.Kind, err, doc)
		}
		if n := name(); n == "" {
			t.Errorf("a %s without a name", head.Kind)
		}
	}
	return r
}

func stripComments(doc string) string {
	var keep []string
	for l := range strings.SplitSeq(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

var agents = []string{"TextAgent", "ImageSearchAgent", "AnalysisAgent", "FolderAgent", "DocumentSearchAgent", "SummarizeAgent"}

func envOf(c corev1.Container) map[string]string {
	m := map[string]string{}
	for _, e := range c.Env {
		m[e.Name] = e.Value
	}
	return m
}

// checkWorkloads checks what default and secure values share: the
// orchestrator, the gateway and one Deployment per agent, each with its
// probes and, but for the gateway, its scrape annotations; a ScaledObject
// per agent on its consumer of MESH_TASKS and the orchestrators' on
// MESH_REQUESTS, each naming a rendered Deployment.
func checkWorkloads(t *testing.T, r rendered) {
	t.Helper()
	want := []string{"am-agentmesh-orchestrator", "am-agentmesh-gateway"}
	for _, a := range agents {
		want = append(want, "am-agentmesh-agent-"+strings.ToLower(a))
	}
	for _, name := range want {
		d, ok := r.deployments[name]
		if !ok {
			t.Errorf("no Deployment %s; rendered %v", name, keys(r.deployments))
			continue
		}
		c := d.Spec.Template.Spec.Containers[0]
		if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
			t.Errorf("%s: probes %+v %+v; want /healthz and /readyz", name, c.LivenessProbe, c.ReadinessProbe)
		}
		port := c.ReadinessProbe.HTTPGet.Port
		if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.ContainerPort == port.IntVal }) {
			t.Errorf("%s: the probes' port %s is not a port of the container %+v", name, port.String(), c.Ports)
		}
		ann := d.Spec.Template.Annotations
		if name == "am-agentmesh-gateway" {
			if args := strings.Join(c.Args, " "); args != "gateway --http :8080" {
				t.Errorf("gateway args %q", args)
			}
			continue
		}
		if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] != "9464" || envOf(c)["AGENTMESH_METRICS_ADDR"] != ":9464" {
			t.Errorf("%s: annotations %v, env %v; want Prometheus to scrape :9464 where the process serves", name, ann, envOf(c))
		}
		if d.Spec.Replicas != nil {
			t.Errorf("%s: replicas %d set beside a ScaledObject, which owns them", name, *d.Spec.Replicas)
		}
	}
	scaled := map[string]string{"am-agentmesh-orchestrator": "MESH_REQUESTS/orchestrator"}
	for _, a := range agents {
		scaled["am-agentmesh-agent-"+strings.ToLower(a)] = "MESH_TASKS/" + a
	}
	if len(r.scaled) != len(scaled) {
		t.Errorf("%d ScaledObjects, want %d: %v", len(r.scaled), len(scaled), keys(r.scaled))
	}
	for name, target := range scaled {
		so, ok := r.scaled[name]
		if !ok {
			t.Errorf("no ScaledObject %s", name)
			continue
		}
		if _, ok := r.deployments[so.Spec.ScaleTargetRef.Name]; !ok || so.Spec.ScaleTargetRef.Name != name {
			t.Errorf("ScaledObject %s scales %q, not its Deployment", name, so.Spec.ScaleTargetRef.Name)
		}
		if so.Spec.MinReplicaCount == nil || *so.Spec.MinReplicaCount < 1 || so.Spec.MaxReplicaCount == nil || *so.Spec.MaxReplicaCount < *so.Spec.MinReplicaCount {
			t.Errorf("ScaledObject %s: min %v max %v", name, so.Spec.MinReplicaCount, so.Spec.MaxReplicaCount)
		}
		if len(so.Spec.Triggers) != 1 || so.Spec.Triggers[0].Type != "nats-jetstream" {
			t.Fatalf("ScaledObject %s: triggers %+v", name, so.Spec.Triggers)
		}
		md := so.Spec.Triggers[0].Metadata
		for k := range md {
			if _, known := natsJetStreamMetadata[k]; !known {
				t.Errorf("ScaledObject %s: metadata %q is not a field of KEDA's nats-jetstream trigger", name, k)
			}
		}
		for k, required := range natsJetStreamMetadata {
			if required && md[k] == "" {
				t.Errorf("ScaledObject %s: metadata %q is missing", name, k)
			}
		}
		if got := md["stream"] + "/" + md["consumer"]; got != target {
			t.Errorf("ScaledObject %s scales on %s, want %s", name, got, target)
		}
	}
	if s, ok := r.services["am-agentmesh-gateway"]; !ok || s.Spec.Ports[0].TargetPort.StrVal != "http" {
		t.Errorf("the gateway's Service: %+v", s)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestChartDefaultValues: the chart with its defaults points every
// process at NATS by URL, with no credentials.
func TestChartDefaultValues(t *testing.T) {
	r := render(t, "default-values.yaml")
	checkWorkloads(t, r)
	if len(r.secrets) != 0 {
		t.Errorf("secrets without secure mode: %v", keys(r.secrets))
	}
	for name, d := range r.deployments {
		env := envOf(d.Spec.Template.Spec.Containers[0])
		if env["NATS_URL"] != "nats://nats.nats.svc.cluster.local:4222" || env["AGENTMESH_JS_REPLICAS"] != "3" || env["NATS_CREDS"] != "" {
			t.Errorf("%s: env %v", name, env)
		}
	}
}

// TestChartSecureValues: in secure mode each Deployment mounts its own
// identity's credentials Secret (and no other) and the CA, and connects
// by TLS.
func TestChartSecureValues(t *testing.T) {
	r := render(t, "secure-values.yaml")
	checkWorkloads(t, r)
	identities := map[string]string{"am-agentmesh-orchestrator": "orchestrator", "am-agentmesh-gateway": "gateway"}
	for _, a := range agents {
		identities["am-agentmesh-agent-"+strings.ToLower(a)] = "agent-" + strings.ToLower(a)
	}
	for name, identity := range identities {
		d := r.deployments[name]
		if d == nil {
			continue
		}
		env := envOf(d.Spec.Template.Spec.Containers[0])
		if !strings.HasPrefix(env["NATS_URL"], "tls://") || env["NATS_CREDS"] == "" || env["NATS_CA"] == "" {
			t.Errorf("%s: env %v; want a tls:// URL, NATS_CREDS and NATS_CA", name, env)
		}
		secret := fmt.Sprintf("am-agentmesh-creds-%s", identity)
		var mounted []string
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Secret != nil {
				mounted = append(mounted, v.Secret.SecretName)
			}
		}
		slices.Sort(mounted)
		if want := []string{"agentmesh-ca", secret}; !slices.Equal(mounted, want) {
			t.Errorf("%s mounts the Secrets %v, want %v", name, mounted, want)
		}
		if _, ok := r.secrets[secret]; !ok {
			t.Errorf("%s: its credentials Secret %s is not rendered (have %v)", name, secret, keys(r.secrets))
		}
	}
	if len(r.secrets) != len(identities) {
		t.Errorf("%d Secrets, want one per identity (%d): %v", len(r.secrets), len(identities), keys(r.secrets))
	}
	if so := r.scaled["am-agentmesh-orchestrator"]; so != nil && so.Spec.Triggers[0].Metadata["account"] == "$G" {
		t.Errorf("secure mode scales on account $G; the mesh's streams are in its own account")
	}
}

// TestChartVersionsSideBySide: two versions of one agent render as two
// Deployments, each started with its --agent-version, each scaled on the
// agent's consumer and on its version's own, where pinned tasks and its
// share of a rollout wait (the names bus.VersionConsumer gives).
func TestChartVersionsSideBySide(t *testing.T) {
	r := render(t, "versions-values.yaml")
	for version, want := range map[string]struct{ name, consumer string }{
		"1.4.0": {"am-agentmesh-agent-textagent-v1-4-0", "TextAgent__v_1_4_0"},
		"2.0.0": {"am-agentmesh-agent-textagent-v2-0-0", "TextAgent__v_2_0_0"},
	} {
		d, ok := r.deployments[want.name]
		if !ok {
			t.Errorf("no Deployment %s; rendered %v", want.name, keys(r.deployments))
			continue
		}
		if args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " "); args != "agent TextAgent --agent-version "+version {
			t.Errorf("%s: args %q", want.name, args)
		}
		so, ok := r.scaled[want.name]
		if !ok {
			t.Errorf("no ScaledObject %s; rendered %v", want.name, keys(r.scaled))
			continue
		}
		var consumers []string
		for _, tr := range so.Spec.Triggers {
			consumers = append(consumers, tr.Metadata["stream"]+"/"+tr.Metadata["consumer"])
		}
		if wantC := []string{"MESH_TASKS/TextAgent", "MESH_TASKS/" + want.consumer}; !slices.Equal(consumers, wantC) {
			t.Errorf("ScaledObject %s scales on %v, want %v", want.name, consumers, wantC)
		}
	}
}
