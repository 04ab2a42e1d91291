package a2a

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ListTasksRequest is the params of ListTasks.
type ListTasksRequest struct {
	Tenant               string    `json:"tenant,omitempty"`
	ContextID            string    `json:"contextId,omitempty"`
	Status               TaskState `json:"status,omitempty"`
	PageSize             *int      `json:"pageSize,omitempty"`
	PageToken            string    `json:"pageToken,omitempty"`
	HistoryLength        *int      `json:"historyLength,omitempty"`
	StatusTimestampAfter string    `json:"statusTimestampAfter,omitempty"`
	IncludeArtifacts     bool      `json:"includeArtifacts,omitempty"`
}

// ListTasksResponse is ListTasks' result.
type ListTasksResponse struct {
	Tasks         []Task `json:"tasks"`
	NextPageToken string `json:"nextPageToken"`
	PageSize      int    `json:"pageSize"`
	TotalSize     int    `json:"totalSize"`
}

// listTasks lists the endpoint's tasks, the most recently changed first,
// filtered by context, state and time, a page at a time (50 by default, at
// most 100).
func (h *Handler) listTasks(req Request, run taskRunner) (ListTasksResponse, error) {
	var p ListTasksRequest
	if len(req.Params) > 0 {
		if err := decodeParams(req, &p); err != nil {
			return ListTasksResponse{}, err
		}
	}
	size := 50
	if p.PageSize != nil {
		if *p.PageSize < 1 || *p.PageSize > 100 {
			return ListTasksResponse{}, fmt.Errorf("%w: pageSize %d: use 1 to 100", ErrInvalidParams, *p.PageSize)
		}
		size = *p.PageSize
	}
	offset, err := decodePageToken(p.PageToken)
	if err != nil {
		return ListTasksResponse{}, err
	}
	var after time.Time
	if p.StatusTimestampAfter != "" {
		if after, err = time.Parse(time.RFC3339Nano, p.StatusTimestampAfter); err != nil {
			return ListTasksResponse{}, fmt.Errorf("%w: statusTimestampAfter %q is not an RFC 3339 time", ErrInvalidParams, p.StatusTimestampAfter)
		}
	}
	var all []Task
	for _, e := range h.tasks.all() {
		if !run.owns(e) {
			continue
		}
		t := e.snapshot(p.HistoryLength)
		ts, _ := time.Parse(time.RFC3339Nano, t.Status.Timestamp)
		if (p.ContextID != "" && t.ContextID != p.ContextID) ||
			(p.Status != "" && p.Status != "TASK_STATE_UNSPECIFIED" && t.Status.State != p.Status) ||
			(!after.IsZero() && ts.Before(after)) {
			continue
		}
		if !p.IncludeArtifacts {
			t.Artifacts = nil
		}
		all = append(all, t)
	}
	slices.SortStableFunc(all, func(a, b Task) int {
		ta, _ := time.Parse(time.RFC3339Nano, a.Status.Timestamp)
		tb, _ := time.Parse(time.RFC3339Nano, b.Status.Timestamp)
		if c := tb.Compare(ta); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	res := ListTasksResponse{Tasks: []Task{}, PageSize: size, TotalSize: len(all)}
	if offset < len(all) {
		end := min(offset+size, len(all))
		res.Tasks = all[offset:end]
		if end < len(all) {
			res.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end)))
		}
	}
	return res, nil
}

func decodePageToken(tok string) (int, error) {
	if tok == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	n, err2 := strconv.Atoi(string(b))
	if err != nil || err2 != nil || n < 0 {
		return 0, fmt.Errorf("%w: pageToken %q is not one this bridge gave: start without one", ErrInvalidParams, clip(tok))
	}
	return n, nil
}
