package schemas

import (
	"encoding/json"
	"fmt"
	"time"
)

// Built-in data types.
const (
	TypeFileIDs        = "FILE_IDS"
	TypeCategorization = "CATEGORIZATION"
	TypeFolderResult   = "FOLDER_RESULT"
	TypeAnalysisResult = "ANALYSIS_RESULT"
	TypeText           = "TEXT"
	TypeCrossRef       = "CROSS_REF"
)

// TypedValue is a value tagged with its data type, the kind of content it
// holds and where it came from. Value is raw JSON so that it crosses the bus
// and the KV store unchanged and can be validated against its type's schema.
type TypedValue struct {
	DataType        string          `json:"data_type"`
	ContentTypeHint string          `json:"content_type_hint,omitempty"`
	Value           json.RawMessage `json:"value"`
	Source          string          `json:"source,omitempty"`
	ProducedAt      time.Time       `json:"produced_at,omitzero"`
}

// NewValue marshals v as a value of dataType. For a FileCollection the content
// type hint is taken from the collection.
func NewValue(dataType string, v any, source string) (TypedValue, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return TypedValue{}, fmt.Errorf("%s value from %s: %w", dataType, source, err)
	}
	tv := TypedValue{DataType: dataType, Value: raw, Source: source, ProducedAt: time.Now().UTC()}
	if fc, ok := v.(FileCollection); ok {
		tv.ContentTypeHint = fc.ContentType()
	}
	return tv, nil
}

// FilesValue wraps a collection as a FILE_IDS value whose hint is the
// collection's content type.
func FilesValue(fc FileCollection, source string) TypedValue {
	raw, _ := fc.MarshalJSON() // cannot fail: strings and ints only
	return TypedValue{DataType: TypeFileIDs, ContentTypeHint: fc.ContentType(), Value: raw, Source: source, ProducedAt: time.Now().UTC()}
}

// TextValue wraps s as a TEXT value.
func TextValue(s, source string) TypedValue {
	raw, _ := json.Marshal(s) // a string always marshals
	return TypedValue{DataType: TypeText, Value: raw, Source: source, ProducedAt: time.Now().UTC()}
}

// Decode unmarshals the value into dst.
func (v TypedValue) Decode(dst any) error {
	if len(v.Value) == 0 {
		return fmt.Errorf("%w: %s value is empty", ErrInvalidValue, v.DataType)
	}
	if err := json.Unmarshal(v.Value, dst); err != nil {
		return fmt.Errorf("%w: %s value: %v", ErrInvalidValue, v.DataType, err)
	}
	return nil
}

// Files decodes a FILE_IDS value.
func (v TypedValue) Files() (FileCollection, error) {
	if v.DataType != TypeFileIDs {
		return FileCollection{}, fmt.Errorf("%w: want %s, have %s", ErrTypeMismatch, TypeFileIDs, v.DataType)
	}
	var fc FileCollection
	err := v.Decode(&fc)
	return fc, err
}

// Text decodes a TEXT value.
func (v TypedValue) Text() (string, error) {
	if v.DataType != TypeText {
		return "", fmt.Errorf("%w: want %s, have %s", ErrTypeMismatch, TypeText, v.DataType)
	}
	var s string
	err := v.Decode(&s)
	return s, err
}

// Categorization is the value of a CATEGORIZATION: file IDs grouped under
// category names, in first-seen order within each category.
type Categorization struct {
	Categories map[string][]string `json:"categories"`
	Method     string              `json:"method,omitempty"`
}

// FolderResult is the value of a FOLDER_RESULT: which files went into which folder.
type FolderResult struct {
	Folders map[string][]string `json:"folders"`
	Moved   int                 `json:"moved"`
}

// AnalysisResult is the value of an ANALYSIS_RESULT: per-file findings.
type AnalysisResult struct {
	Method string         `json:"method,omitempty"`
	Items  []AnalysisItem `json:"items"`
}

// AnalysisItem is what was found about one file.
type AnalysisItem struct {
	ID       string             `json:"id"`
	Labels   []string           `json:"labels,omitempty"`
	Caption  string             `json:"caption,omitempty"`
	Features map[string]float64 `json:"features,omitempty"`
}

// CrossRef is the value of a CROSS_REF: typed links between files.
type CrossRef struct {
	Links []CrossLink `json:"links"`
}

// CrossLink relates two files.
type CrossLink struct {
	From     string  `json:"from"`
	To       string  `json:"to"`
	Relation string  `json:"relation"`
	Score    float64 `json:"score,omitempty"`
}
