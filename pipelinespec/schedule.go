package pipelinespec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schedule says when a pipeline runs by itself: exactly one of Cron,
// Every and At. The mesh carries it as a JetStream message schedule
// (docs/protocol.md, "Schedules"), so no scheduler process keeps it.
type Schedule struct {
	// Cron is six fields, seconds first: "0 30 9 * * MON-FRI" runs at
	// 9:30:00 on weekdays; or @hourly, @daily (@midnight), @weekly,
	// @monthly, @yearly (@annually).
	Cron string `json:"cron,omitempty" yaml:"cron"`
	// Every is a Go duration of at least one second: "90s", "1h".
	Every string `json:"every,omitempty" yaml:"every"`
	// At is one time, RFC 3339 with a zone: "2026-12-01T09:00:00Z".
	At string `json:"at,omitempty" yaml:"at"`
	// TimeZone is the IANA zone Cron is read in ("Europe/Paris"); UTC
	// when empty. Only with Cron.
	TimeZone string `json:"time_zone,omitempty" yaml:"time_zone"`
}

// ErrInvalidSchedule reports a schedule that cannot be read.
var ErrInvalidSchedule = errors.New("invalid schedule")

// Validate reports every problem of s at once, each naming the bad value
// and what to write instead.
func (s Schedule) Validate() error {
	var errs []error
	set := 0
	for _, v := range []string{s.Cron, s.Every, s.At} {
		if v != "" {
			set++
		}
	}
	if set != 1 {
		errs = append(errs, fmt.Errorf("%w: give exactly one of cron, every and at (%d given)", ErrInvalidSchedule, set))
	}
	if s.Cron != "" {
		if err := validateCron(s.Cron); err != nil {
			errs = append(errs, fmt.Errorf("%w: cron %q: %w", ErrInvalidSchedule, s.Cron, err))
		}
	}
	if s.Every != "" {
		d, err := time.ParseDuration(s.Every)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%w: every %q is not a duration: write e.g. 90s, 15m or 1h", ErrInvalidSchedule, s.Every))
		case d < time.Second:
			errs = append(errs, fmt.Errorf("%w: every %q is shorter than the least interval, 1s", ErrInvalidSchedule, s.Every))
		}
	}
	if s.At != "" {
		if _, err := time.Parse(time.RFC3339, s.At); err != nil {
			errs = append(errs, fmt.Errorf("%w: at %q is not an RFC 3339 time: write e.g. 2026-12-01T09:00:00Z", ErrInvalidSchedule, s.At))
		}
	}
	if s.TimeZone != "" {
		if s.Cron == "" {
			errs = append(errs, fmt.Errorf("%w: time_zone %q applies to cron only: write at with its offset, or drop time_zone", ErrInvalidSchedule, s.TimeZone))
		} else if _, err := time.LoadLocation(s.TimeZone); err != nil {
			errs = append(errs, fmt.Errorf("%w: time_zone %q is not an IANA time zone: write e.g. UTC or Europe/Paris", ErrInvalidSchedule, s.TimeZone))
		}
	}
	return errors.Join(errs...)
}

// Pattern returns the Nats-Schedule header value of s: "@at <RFC 3339>"
// (in UTC), "@every <duration>", or the cron expression. s must be valid.
func (s Schedule) Pattern() string {
	switch {
	case s.At != "":
		t, _ := time.Parse(time.RFC3339, s.At)
		return "@at " + t.UTC().Format(time.RFC3339)
	case s.Every != "":
		d, _ := time.ParseDuration(s.Every)
		return "@every " + d.String()
	default:
		return strings.Join(strings.Fields(s.Cron), " ")
	}
}

// String is the schedule as a person writes it: "every 1h", "at ...",
// "cron 0 0 9 * * *" (with " in <zone>").
func (s Schedule) String() string {
	switch {
	case s.At != "":
		return "at " + s.At
	case s.Every != "":
		return "every " + s.Every
	case s.TimeZone != "":
		return "cron " + s.Cron + " in " + s.TimeZone
	default:
		return "cron " + s.Cron
	}
}

// cronMacros are the named schedules the server reads.
var cronMacros = map[string]bool{"@yearly": true, "@annually": true, "@monthly": true, "@weekly": true, "@daily": true, "@midnight": true, "@hourly": true}

// cronField is one field of a cron expression: its name, its bounds, and
// the names it accepts for values.
type cronField struct {
	name     string
	min, max int
	names    []string // names[i] is min+i
}

var cronFields = []cronField{
	{name: "second", max: 59},
	{name: "minute", max: 59},
	{name: "hour", max: 23},
	{name: "day of month", min: 1, max: 31},
	{name: "month", min: 1, max: 12, names: []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}},
	{name: "day of week", max: 6, names: []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}},
}

// validateCron checks a cron expression as JetStream reads it: six fields
// (second minute hour day-of-month month day-of-week), each a list of *,
// ?, N or N-M, each with an optional /step; or a macro.
func validateCron(expr string) error {
	if strings.HasPrefix(expr, "@") {
		if cronMacros[expr] {
			return nil
		}
		return fmt.Errorf("unknown macro: use @hourly, @daily, @weekly, @monthly or @yearly, or six fields")
	}
	fields := strings.Fields(expr)
	if len(fields) != len(cronFields) {
		return fmt.Errorf("has %d fields, a cron schedule has 6, seconds first: e.g. \"0 0 9 * * *\" for 9:00:00 daily", len(fields))
	}
	var errs []error
	for i, f := range fields {
		if err := cronFields[i].check(f); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", cronFields[i].name, f, err))
		}
	}
	return errors.Join(errs...)
}

func (c cronField) check(field string) error {
	for part := range strings.SplitSeq(field, ",") {
		rng, step, hasStep := strings.Cut(part, "/")
		if hasStep {
			n, err := strconv.Atoi(step)
			if err != nil || n < 1 {
				return fmt.Errorf("step %q must be a whole number of at least 1", step)
			}
		}
		if rng == "*" || rng == "?" {
			continue
		}
		lo, hi, isRange := strings.Cut(rng, "-")
		a, err := c.value(lo)
		if err != nil {
			return err
		}
		if !isRange {
			continue
		}
		b, err := c.value(hi)
		if err != nil {
			return err
		}
		if a > b {
			return fmt.Errorf("range %s runs backwards", rng)
		}
	}
	return nil
}

func (c cronField) value(v string) (int, error) {
	for i, n := range c.names {
		if strings.EqualFold(v, n) {
			return c.min + i, nil
		}
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number from %d to %d", v, c.min, c.max)
	}
	if n < c.min || n > c.max {
		return 0, fmt.Errorf("%d is outside %d to %d", n, c.min, c.max)
	}
	return n, nil
}
