package state

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/agentmesh/agentmesh/pipelinespec"
)

// A spec read back from KV is compacted (its steps slice to size, one copy
// of each agent name and step id) and reads the same as before: every
// step, its position and its wave.
func TestCompactedSpecReadsTheSame(t *testing.T) {
	sd := RunSpec{ID: "r"}
	var wave0, wave1 []string
	for i := range 1100 {
		id := fmt.Sprintf("s%04d", i)
		st := pipelinespec.PipelineStep{ID: id, Agent: "Echo"}
		if i%2 == 1 {
			st.DependsOn, st.Agent, st.Kind = []string{"s0000"}, "Other", "agent"
			wave1 = append(wave1, id)
		} else {
			wave0 = append(wave0, id)
		}
		sd.Spec.Steps = append(sd.Spec.Steps, st)
	}
	sd.Waves = [][]string{wave0, wave1}
	b, err := json.Marshal(&sd)
	if err != nil {
		t.Fatal(err)
	}
	var plain, small RunSpec
	if err := json.Unmarshal(b, &plain); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &small); err != nil {
		t.Fatal(err)
	}
	plain.Init()
	small.compact()
	small.Init()
	if cap(small.Spec.Steps) >= cap(plain.Spec.Steps) {
		t.Errorf("compacted steps have capacity %d, the decoded %d: want less", cap(small.Spec.Steps), cap(plain.Spec.Steps))
	}
	if !reflect.DeepEqual(plain.Spec, small.Spec) || !reflect.DeepEqual(plain.Waves, small.Waves) {
		t.Fatal("the compacted spec differs from the decoded one")
	}
	for _, st := range plain.Spec.Steps {
		got, ok := small.Step(st.ID)
		pw, _ := plain.WaveOf(st.ID)
		sw, sok := small.WaveOf(st.ID)
		if !ok || !reflect.DeepEqual(got, st) || !sok || sw != pw {
			t.Fatalf("step %s: compacted reads %+v in wave %d (%v), want %+v in wave %d", st.ID, got, sw, sok, st, pw)
		}
	}
}
