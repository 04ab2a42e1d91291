package pipelinespec_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/pipelinespec"
)

func TestScheduleValidate(t *testing.T) {
	for _, tc := range []struct {
		s       pipelinespec.Schedule
		pattern string
		errs    []string
	}{
		{s: pipelinespec.Schedule{Every: "90s"}, pattern: "@every 1m30s"},
		{s: pipelinespec.Schedule{At: "2026-12-01T10:00:00+01:00"}, pattern: "@at 2026-12-01T09:00:00Z"},
		{s: pipelinespec.Schedule{Cron: "0  30 9 * * MON-FRI"}, pattern: "0 30 9 * * MON-FRI"},
		{s: pipelinespec.Schedule{Cron: "*/15 0,30 1-5/2 ? jan-jun *", TimeZone: "Europe/Paris"}, pattern: "*/15 0,30 1-5/2 ? jan-jun *"},
		{s: pipelinespec.Schedule{Cron: "@daily"}, pattern: "@daily"},
		{s: pipelinespec.Schedule{}, errs: []string{"exactly one of cron, every and at (0 given)"}},
		{s: pipelinespec.Schedule{Every: "1h", At: "2026-12-01T09:00:00Z"}, errs: []string{"(2 given)"}},
		{s: pipelinespec.Schedule{Every: "500ms"}, errs: []string{`every "500ms" is shorter than the least interval, 1s`}},
		{s: pipelinespec.Schedule{Every: "daily"}, errs: []string{`every "daily" is not a duration`}},
		{s: pipelinespec.Schedule{At: "2026-12-01 09:00"}, errs: []string{`at "2026-12-01 09:00" is not an RFC 3339 time`}},
		{s: pipelinespec.Schedule{Cron: "0 0 9 * *"}, errs: []string{"has 5 fields, a cron schedule has 6"}},
		{s: pipelinespec.Schedule{Cron: "60 0 9 32 * xyz"}, errs: []string{`second "60": 60 is outside 0 to 59`, `day of month "32": 32 is outside 1 to 31`, `day of week "xyz": "xyz" is not a number from 0 to 6`}},
		{s: pipelinespec.Schedule{Cron: "0 0 9-5 * * *"}, errs: []string{"range 9-5 runs backwards"}},
		{s: pipelinespec.Schedule{Cron: "*/0 * * * * *"}, errs: []string{`step "0" must be a whole number of at least 1`}},
		{s: pipelinespec.Schedule{Cron: "@often"}, errs: []string{"unknown macro"}},
		{s: pipelinespec.Schedule{Every: "1h", TimeZone: "Europe/Paris"}, errs: []string{`time_zone "Europe/Paris" applies to cron only`}},
		{s: pipelinespec.Schedule{Cron: "@daily", TimeZone: "Mars/Olympus"}, errs: []string{`time_zone "Mars/Olympus" is not an IANA time zone`}},
	} {
		err := tc.s.Validate()
		if len(tc.errs) == 0 {
			if err != nil {
				t.Errorf("%+v: %v", tc.s, err)
			} else if got := tc.s.Pattern(); got != tc.pattern {
				t.Errorf("%+v: pattern %q, want %q", tc.s, got, tc.pattern)
			}
			continue
		}
		if !errors.Is(err, pipelinespec.ErrInvalidSchedule) {
			t.Errorf("%+v: %v; want ErrInvalidSchedule", tc.s, err)
			continue
		}
		for _, want := range tc.errs {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%+v: %q lacks %q", tc.s, err, want)
			}
		}
	}
}

// A spec's schedule is checked with the rest of it.
func TestPipelineSpecValidatesItsSchedule(t *testing.T) {
	spec := pipelinespec.PipelineSpec{Name: "p", Steps: []pipelinespec.PipelineStep{{ID: "a", Agent: "TextAgent"}}, Schedule: &pipelinespec.Schedule{Every: "0s"}}
	if err := spec.Validate(); !errors.Is(err, pipelinespec.ErrInvalidSchedule) || !strings.Contains(err.Error(), `pipeline "p": invalid schedule: every "0s"`) {
		t.Errorf("Validate: %v", err)
	}
}
