package a2a

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// A2A 1.0's JSON is the ProtoJSON form of its protobuf messages: a reader
// takes an enum by name or by number, and bytes in standard or URL-safe
// base64, padded or not. These types read all of those and write the
// canonical form (names, padded standard base64).

var roleNumbers = map[int]Role{0: "ROLE_UNSPECIFIED", 1: RoleUser, 2: RoleAgent}

var stateNumbers = map[int]TaskState{
	0: "TASK_STATE_UNSPECIFIED", 1: StateSubmitted, 2: StateWorking, 3: StateCompleted, 4: StateFailed,
	5: StateCanceled, 6: StateInputRequired, 7: StateRejected, 8: StateAuthRequired,
}

// UnmarshalJSON reads a role by name or number.
func (r *Role) UnmarshalJSON(b []byte) error {
	s, err := enumJSON(b, func(n int) (string, bool) { v, ok := roleNumbers[n]; return string(v), ok })
	*r = Role(s)
	return err
}

// UnmarshalJSON reads a task state by name or number.
func (s *TaskState) UnmarshalJSON(b []byte) error {
	v, err := enumJSON(b, func(n int) (string, bool) { v, ok := stateNumbers[n]; return string(v), ok })
	*s = TaskState(v)
	return err
}

func enumJSON(b []byte, byNumber func(int) (string, bool)) (string, error) {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		return s, nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return "", fmt.Errorf("an enum is a name or a number, not %s", clip(string(b)))
	}
	name, ok := byNumber(n)
	if !ok {
		return "", fmt.Errorf("enum number %d is unknown", n)
	}
	return name, nil
}

// Bytes is file content: base64 in JSON.
type Bytes []byte

// MarshalJSON writes padded standard base64.
func (b Bytes) MarshalJSON() ([]byte, error) {
	return json.Marshal(base64.StdEncoding.EncodeToString(b))
}

// UnmarshalJSON reads standard or URL-safe base64, padded or not.
func (b *Bytes) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("raw: bytes are a base64 string, not %s", clip(string(data)))
	}
	s = strings.TrimRight(s, "=")
	enc := base64.RawStdEncoding
	if strings.ContainsAny(s, "-_") {
		enc = base64.RawURLEncoding
	}
	out, err := enc.DecodeString(s)
	if err != nil {
		return fmt.Errorf("raw: not base64: %v", err)
	}
	*b = out
	return nil
}
