package gateway

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentmesh/agentmesh/internal/stateview"
	"github.com/agentmesh/agentmesh/schemas"
)

// listQuery is what a request for a list of runs or conversations asks
// for: ?q= (words each found in the id or the name, any case), ?status=
// (repeat it, or commas), ?agent=, ?name= (runs), ?since= and ?until= (on the
// creation time), ?sort= (a field, "-" first for descending), ?limit= and
// ?offset=.
type listQuery struct {
	words         []string
	status        []string
	agent, name   string
	since, until  time.Time
	sort          string
	desc          bool
	limit, offset int
}

// listField is what a list's filters and sort keys read of one item.
type listField[T any] struct {
	text     func(T) string   // what ?q= searches
	statuses []string         // what ?status= takes
	status   func(T) []string // the statuses ?status= matches
	agents   func(T) []string // the agents ?agent= matches
	name     func(T) string   // nil: the list takes no ?name=
	created  func(T) time.Time
	sorts    map[string]func(a, b T) int
}

// runStatuses are what ?status= takes for runs: a run's status, or waiting
// (a step waits for a person).
var runStatuses = []string{schemas.RunRunning, "waiting", schemas.RunCompleted, schemas.RunFailed, schemas.RunCancelled}

var runFields = listField[stateview.RunSummary]{
	text:     func(r stateview.RunSummary) string { return r.ID + " " + r.Name },
	statuses: runStatuses,
	status: func(r stateview.RunSummary) []string {
		if len(r.Waiting) > 0 {
			return []string{r.Status, "waiting"}
		}
		return []string{r.Status}
	},
	agents:  func(r stateview.RunSummary) []string { return r.Agents },
	name:    func(r stateview.RunSummary) string { return r.Name },
	created: func(r stateview.RunSummary) time.Time { return r.CreatedAt },
	sorts: map[string]func(a, b stateview.RunSummary) int{
		"id":          func(a, b stateview.RunSummary) int { return strings.Compare(a.ID, b.ID) },
		"name":        func(a, b stateview.RunSummary) int { return strings.Compare(a.Name, b.Name) },
		"status":      func(a, b stateview.RunSummary) int { return strings.Compare(a.Status, b.Status) },
		"steps":       func(a, b stateview.RunSummary) int { return cmp.Compare(a.Steps, b.Steps) },
		"created_at":  func(a, b stateview.RunSummary) int { return a.CreatedAt.Compare(b.CreatedAt) },
		"updated_at":  func(a, b stateview.RunSummary) int { return a.UpdatedAt.Compare(b.UpdatedAt) },
		"duration_ms": func(a, b stateview.RunSummary) int { return cmp.Compare(runTook(a), runTook(b)) },
	},
}

// runTook is how long a run took, or has been going as of its last write.
func runTook(r stateview.RunSummary) time.Duration {
	if !r.FinishedAt.IsZero() {
		return r.FinishedAt.Sub(r.CreatedAt)
	}
	return r.UpdatedAt.Sub(r.CreatedAt)
}

// conversationStatuses are what ?status= takes for conversations: how
// the latest turn ended, or running.
var conversationStatuses = []string{stateview.ConversationRunning, schemas.ChatInputRequired, schemas.ChatCompleted,
	schemas.ChatStepLimitReached, schemas.ChatFailed}

var conversationFields = listField[stateview.ConversationSummary]{
	text:     func(c stateview.ConversationSummary) string { return c.ID + " " + c.LastMessage },
	statuses: conversationStatuses,
	status:   func(c stateview.ConversationSummary) []string { return []string{c.State} },
	agents:   func(c stateview.ConversationSummary) []string { return c.Agents },
	created:  func(c stateview.ConversationSummary) time.Time { return c.CreatedAt },
	sorts: map[string]func(a, b stateview.ConversationSummary) int{
		"id":         func(a, b stateview.ConversationSummary) int { return strings.Compare(a.ID, b.ID) },
		"turns":      func(a, b stateview.ConversationSummary) int { return cmp.Compare(a.Turns, b.Turns) },
		"created_at": func(a, b stateview.ConversationSummary) int { return a.CreatedAt.Compare(b.CreatedAt) },
		"updated_at": func(a, b stateview.ConversationSummary) int { return a.UpdatedAt.Compare(b.UpdatedAt) },
	},
}

// parseListQuery reads a list request's query, refusing a parameter the
// list does not take and every bad value with what to give instead.
func parseListQuery[T any](r *http.Request, what string, f listField[T], now time.Time) (listQuery, error) {
	v := r.URL.Query()
	var q listQuery
	var err error
	if q.limit, err = intParam(r, "limit", 50); err != nil {
		return q, err
	}
	if q.offset, err = intParam(r, "offset", 0); err != nil {
		return q, err
	}
	q.words = strings.Fields(strings.ToLower(v.Get("q")))
	for _, s := range v["status"] {
		for _, one := range strings.Split(s, ",") {
			if one = strings.TrimSpace(one); one == "" {
				continue
			}
			if !slices.Contains(f.statuses, one) {
				return q, fail(schemas.CodeInvalidRequest, "?status=%s: give one of %s", one, strings.Join(f.statuses, ", "))
			}
			q.status = append(q.status, one)
		}
	}
	q.agent = v.Get("agent")
	if q.name = v.Get("name"); q.name != "" && f.name == nil {
		return q, fail(schemas.CodeInvalidRequest, "?name=%s: %s have no name; search them with q", q.name, what)
	}
	if q.since, err = timeParam(r, "since", now); err != nil {
		return q, err
	}
	if q.until, err = timeParam(r, "until", now); err != nil {
		return q, err
	}
	if s := v.Get("sort"); s != "" {
		q.sort, q.desc = strings.CutPrefix(s, "-")
		if _, ok := f.sorts[q.sort]; !ok {
			keys := make([]string, 0, len(f.sorts))
			for k := range f.sorts {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			return q, fail(schemas.CodeInvalidRequest, "?sort=%s: sort %s by one of %s (a leading - for descending)", s, what, strings.Join(keys, ", "))
		}
	}
	return q, nil
}

// timeParam reads a time: RFC 3339, or a duration meaning that long before
// now ("90m", "24h").
func timeParam(r *http.Request, name string, now time.Time) (time.Time, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fail(schemas.CodeInvalidRequest, "?%s=%s: give a time in RFC 3339 (2026-01-02T15:04:05Z) or how long ago (90m, 24h)", name, v)
}

// plain reports whether q only pages the list in its stored order (most
// recently written first), which needs no more items read than it shows.
func (q listQuery) plain() bool {
	return len(q.words) == 0 && len(q.status) == 0 && q.agent == "" && q.name == "" &&
		q.since.IsZero() && q.until.IsZero() && q.sort == ""
}

// apply filters, sorts and pages items (most recently written first) and
// returns the page and how many items match.
func apply[T any](q listQuery, f listField[T], items []T) ([]T, int) {
	out := items[:0:0]
	for _, it := range items {
		if matches(q, f, it) {
			out = append(out, it)
		}
	}
	if q.sort != "" {
		by := f.sorts[q.sort]
		slices.SortStableFunc(out, func(a, b T) int {
			if q.desc {
				return by(b, a)
			}
			return by(a, b)
		})
	}
	total := len(out)
	out = out[min(q.offset, total):]
	if q.limit > 0 && len(out) > q.limit {
		out = out[:q.limit]
	}
	return out, total
}

// matches reports whether it passes every filter of q.
func matches[T any](q listQuery, f listField[T], it T) bool {
	if len(q.words) > 0 {
		text := strings.ToLower(f.text(it))
		for _, w := range q.words {
			if !strings.Contains(text, w) {
				return false
			}
		}
	}
	if len(q.status) > 0 && !slices.ContainsFunc(f.status(it), func(s string) bool { return slices.Contains(q.status, s) }) {
		return false
	}
	if q.agent != "" && !slices.Contains(f.agents(it), q.agent) {
		return false
	}
	if q.name != "" && f.name(it) != q.name {
		return false
	}
	created := f.created(it)
	if !q.since.IsZero() && created.Before(q.since) {
		return false
	}
	return q.until.IsZero() || created.Before(q.until)
}

// writeList answers a list request: the items recent gives (most recently
// written first), filtered, sorted and paged as the query asks, an empty
// list as [], and how many match in X-Total-Count.
func writeList[T any](w http.ResponseWriter, r *http.Request, what string, f listField[T], recent func(context.Context, int) ([]T, int, error)) error {
	q, err := parseListQuery(r, what, f, time.Now())
	if err != nil {
		return err
	}
	var (
		list  []T
		total int
	)
	if q.plain() {
		n := 0 // all
		if q.limit > 0 {
			n = q.offset + q.limit
		}
		if list, total, err = recent(r.Context(), n); err == nil {
			list = list[min(q.offset, len(list)):]
		}
	} else if list, _, err = recent(r.Context(), 0); err == nil {
		list, total = apply(q, f, list)
	}
	if err != nil {
		return meshError("listing "+what, err)
	}
	if list == nil {
		list = []T{}
	}
	w.Header().Set("X-Total-Count", strconv.Itoa(total))
	writeJSON(w, http.StatusOK, list)
	return nil
}
