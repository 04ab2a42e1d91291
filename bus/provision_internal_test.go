package bus

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestUpdateKeepsWhatIsNotSet: an existing resource keeps its replicas and
// ages unless the options set them.
func TestUpdateKeepsWhatIsNotSet(t *testing.T) {
	have := jetstream.StreamConfig{Name: "MESH_RESULTS", Replicas: 3, MaxAge: time.Hour, Duplicates: time.Minute}
	sp := streamSpec("MESH_RESULTS", "agentmesh task results", jetstream.LimitsPolicy, age(0, DefaultResultsMaxAge), ProvisionOptions{})
	if upd := sp.update(have); upd.Replicas != 3 || upd.MaxAge != time.Hour || upd.Duplicates != time.Minute {
		t.Errorf("zero options changed %+v into %+v", have, upd)
	}
	sp = streamSpec("MESH_RESULTS", "d", jetstream.LimitsPolicy, age(30*time.Second, DefaultResultsMaxAge), ProvisionOptions{Replicas: 5})
	if upd := sp.update(have); upd.Replicas != 5 || upd.MaxAge != 30*time.Second || upd.Duplicates != 30*time.Second {
		t.Errorf("set options: %+v", upd)
	}
	kvHave := jetstream.KeyValueConfig{Bucket: "mesh_runs", Replicas: 3, TTL: time.Hour, History: 5}
	ks := stateBucket("mesh_runs", "d", age(0, DefaultRunsTTL), ProvisionOptions{})
	if upd := ks.update(kvHave); upd.Replicas != 3 || upd.TTL != time.Hour {
		t.Errorf("zero options changed bucket %+v into %+v", kvHave, upd)
	}
	ks = stateBucket("mesh_runs", "d", age(Forever, DefaultRunsTTL), ProvisionOptions{})
	if upd := ks.update(kvHave); upd.TTL != 0 || upd.Replicas != 3 {
		t.Errorf("Forever: %+v", upd)
	}
}

func TestSubjectMatches(t *testing.T) {
	for _, tc := range []struct {
		pattern, subject string
		want             bool
	}{
		{"mesh.task.*", "mesh.task.A", true},
		{"mesh.task.*", "mesh.task.A.v.1_0", false},
		{"mesh.task.*.v.*", "mesh.task.A.v.1_0", true},
		{"$JS.ACK.MESH_TASKS.A.>", "$JS.ACK.MESH_TASKS.A.1.2.3", true},
		{"$JS.ACK.MESH_TASKS.A.>", "$JS.ACK.MESH_TASKS.A", false},
		{"a.b", "a.b.c", false},
		{"a.b.c", "a.b", false},
	} {
		if got := subjectMatches(tc.pattern, tc.subject); got != tc.want {
			t.Errorf("subjectMatches(%q, %q) = %v, want %v", tc.pattern, tc.subject, got, tc.want)
		}
	}
}
