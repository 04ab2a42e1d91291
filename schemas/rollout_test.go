package schemas_test

import (
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/schemas"
)

func TestVersionToken(t *testing.T) {
	for _, tc := range []struct {
		in, want, bad string // bad: what the error names
	}{
		{in: "1.2.0", want: "1_2_0"},
		{in: "v2", want: "v2"},
		{in: "2.0.0-rc.1", want: "2_0_0-rc_1"},
		{in: "", bad: "empty"},
		{in: "1_2", bad: `"1_2" has '_'`},
		{in: "1.0+build", bad: `'+'`},
		{in: "1.0 beta", bad: `' '`},
		{in: "1.*", bad: `'*'`},
		{in: strings.Repeat("1", 33), bad: "33 bytes"},
	} {
		got, err := schemas.VersionToken(tc.in)
		switch {
		case tc.bad == "" && (err != nil || got != tc.want):
			t.Errorf("VersionToken(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("VersionToken(%q) = %q, %v; want an error naming %s", tc.in, got, err, tc.bad)
		}
	}
}

func TestRolloutValidate(t *testing.T) {
	ok := schemas.Rollout{Agent: "Echo", From: "1.0.0", To: "2.0.0", Weight: 10}
	if err := ok.Validate(); err != nil {
		t.Fatalf("%+v: %v", ok, err)
	}
	bad := schemas.Rollout{Agent: "a.b", From: "1_0", To: "1_0", Weight: 101}
	err := bad.Validate()
	for _, want := range []string{`"a.b"`, "from: version \"1_0\"", "to: version \"1_0\"", "both \"1_0\"", "weight 101"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate(%+v) = %v; want it to say %s", bad, err, want)
		}
	}
}

func TestVersionStatsOf(t *testing.T) {
	r := func(v string, ok, shadow bool, ms int64) schemas.AgentResult {
		return schemas.AgentResult{Version: v, Success: ok, Shadow: shadow, Metrics: schemas.Metrics{DurationMS: ms}}
	}
	var in []schemas.AgentResult
	for i := int64(1); i <= 100; i++ {
		in = append(in, r("1.0.0", i%10 != 0, false, i))
	}
	in = append(in, r("2.0.0", true, false, 7), r("2.0.0", false, false, 3), r("2.0.0", true, true, 5))
	got := schemas.VersionStatsOf(in)
	want := []schemas.VersionStats{
		{Version: "1.0.0", Results: 100, Failures: 10, SuccessRate: 0.9, P50MS: 50, P95MS: 95},
		{Version: "2.0.0", Results: 2, Failures: 1, SuccessRate: 0.5, P50MS: 3, P95MS: 7},
		{Version: "2.0.0", Shadow: true, Results: 1, SuccessRate: 1, P50MS: 5, P95MS: 5},
	}
	if len(got) != len(want) {
		t.Fatalf("VersionStatsOf = %+v; want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("VersionStatsOf[%d] = %+v; want %+v", i, got[i], want[i])
		}
	}
}
