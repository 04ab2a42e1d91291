package schemas

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Rollout is the rollout of a new version of one agent, as the rollouts
// bucket holds it (one key per agent) and every server of the mesh applies
// it to the task subject mesh.task.<agent> (docs/protocol.md, "Versions and
// rollouts"): Weight percent of new tasks go to version To, the rest to
// version From. Promoted is a rollout at 100 that stays. Shadow sends a
// copy of each task to To besides, whose result is recorded and delivered
// to no one.
type Rollout struct {
	Agent     string    `json:"agent"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	Weight    int       `json:"weight"`
	Shadow    bool      `json:"shadow,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// RolloutApplied is what a server writes under applied.<server> in the
// rollouts bucket once it has applied every rollout up to Revision.
type RolloutApplied struct {
	Server   string    `json:"server"`
	Revision uint64    `json:"revision"`
	At       time.Time `json:"at"`
	Error    string    `json:"error,omitempty"` // why the last rollout could not be applied
}

// Validate reports every problem of r at once.
func (r Rollout) Validate() error {
	var errs []error
	if err := ValidateAgentName(r.Agent); err != nil {
		errs = append(errs, fmt.Errorf("rollout: %w", err))
	}
	if _, err := VersionToken(r.To); err != nil {
		errs = append(errs, fmt.Errorf("rollout: to: %w", err))
	}
	if _, err := VersionToken(r.From); err != nil {
		errs = append(errs, fmt.Errorf("rollout: from: %w", err))
	}
	if r.From != "" && r.From == r.To {
		errs = append(errs, fmt.Errorf("rollout: from and to are both %q: roll out a version other than the one that runs", r.To))
	}
	if r.Weight < 0 || r.Weight > 100 {
		errs = append(errs, fmt.Errorf("rollout: weight %d: give a percentage from 0 to 100", r.Weight))
	}
	return errors.Join(errs...)
}

// maxVersionLen is the longest version that names a subject.
const maxVersionLen = 32

// VersionToken returns the subject token of an agent version, the token of
// mesh.task.<agent>.v.<token> and of its consumer's name: the version with
// each '.' written '_', e.g. "1.2.0" is "1_2_0". A version is 1 to 32
// ASCII letters, digits, '.' or '-' (no '_', so that two versions never
// share a token); anything else is an error that names the value.
func VersionToken(version string) (string, error) {
	if version == "" {
		return "", fmt.Errorf("version is empty: use 1 to %d letters, digits, '.' or '-', e.g. 1.2.0", maxVersionLen)
	}
	if len(version) > maxVersionLen {
		return "", fmt.Errorf("version %q is %d bytes long: use at most %d letters, digits, '.' or '-'", Clip(version, 80), len(version), maxVersionLen)
	}
	for i := 0; i < len(version); i++ {
		c := version[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' {
			continue
		}
		return "", fmt.Errorf("version %q has %q at byte %d: a version that names a subject holds only letters, digits, '.' or '-'", version, rune(c), i)
	}
	return strings.ReplaceAll(version, ".", "_"), nil
}

// VersionStats is how one version of an agent did over a window of its
// results: what 'agentmesh rollout status' and the dashboard show to judge
// a rollout. Shadow separates the answers to shadow copies.
type VersionStats struct {
	Version     string  `json:"version"` // "" for instances that declare none
	Shadow      bool    `json:"shadow,omitempty"`
	Results     int     `json:"results"`
	Failures    int     `json:"failures"`
	SuccessRate float64 `json:"success_rate"`
	P50MS       int64   `json:"p50_ms"`
	P95MS       int64   `json:"p95_ms"`
}

// VersionStatsOf groups results by version (and shadow) and returns each
// group's counts, success rate and duration percentiles (nearest rank),
// ordered by version, the shadow group after the other.
func VersionStatsOf(results []AgentResult) []VersionStats {
	type key struct {
		v      string
		shadow bool
	}
	groups := map[key][]AgentResult{}
	for _, r := range results {
		k := key{r.Version, r.Shadow}
		groups[k] = append(groups[k], r)
	}
	out := make([]VersionStats, 0, len(groups))
	for k, rs := range groups {
		s := VersionStats{Version: k.v, Shadow: k.shadow, Results: len(rs)}
		ms := make([]int64, len(rs))
		for i, r := range rs {
			if !r.Success {
				s.Failures++
			}
			ms[i] = r.Metrics.DurationMS
		}
		slices.Sort(ms)
		s.SuccessRate = float64(s.Results-s.Failures) / float64(s.Results)
		s.P50MS, s.P95MS = percentile(ms, 50), percentile(ms, 95)
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b VersionStats) int {
		if c := strings.Compare(a.Version, b.Version); c != 0 {
			return c
		}
		switch {
		case a.Shadow == b.Shadow:
			return 0
		case a.Shadow:
			return 1
		}
		return -1
	})
	return out
}

// percentile is the nearest-rank p-th percentile of sorted, non-empty ms.
func percentile(ms []int64, p int) int64 {
	i := (len(ms)*p + 99) / 100
	return ms[max(i, 1)-1]
}
