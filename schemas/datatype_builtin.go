package schemas

import (
	"encoding/json"
	"fmt"
	"strings"
)

// builtinTypes describes the eight built-in data types; NewRegistry adds
// their embedded schemas.
func builtinTypes() []DataType {
	return []DataType{
		{
			Name:        TypeFileIDs,
			Description: "An ordered set of stored file IDs (a FileCollection) with a content type: images, documents, links or mixed.",
			Merge:       mergeFileIDs,
			Slots: map[string]string{
				ContentImages: "current_image_ids", ContentDocuments: "current_document_ids",
				ContentLinks: "current_link_ids", ContentMixed: "current_file_ids", "": "current_file_ids",
			},
			Count:    decodedCount(func(fc FileCollection) int { return fc.Count() }),
			Describe: describeFiles,
		},
		{
			Name:        TypeCategorization,
			Description: "File IDs grouped under category names.",
			Merge:       mergeCategorization,
			Slots:       map[string]string{"": "current_categorization"},
			Count:       decodedCount(func(c Categorization) int { return len(c.Categories) }),
			Unit:        [2]string{"category", "categories"},
			Facts:       categoryFacts,
		},
		{
			Name:        TypeFolderResult,
			Description: "Which files were put into which folder.",
			Count:       decodedCount(func(f FolderResult) int { return len(f.Folders) }),
			Describe:    describeFolders,
		},
		{
			Name:        TypeAnalysisResult,
			Description: "Per-file findings: labels, caption and numeric features.",
			Slots:       map[string]string{"": "current_analysis"},
			Count:       decodedCount(func(a AnalysisResult) int { return len(a.Items) }),
			Unit:        [2]string{"analysed file", "analysed files"},
		},
		{
			Name:        TypeText,
			Description: "Plain text.",
			Slots:       map[string]string{"": "current_text"},
			Describe:    describeText,
			Facts:       textFacts,
		},
		{
			Name:        TypeCrossRef,
			Description: "Typed links between files.",
			Slots:       map[string]string{"": "current_cross_ref"},
			Count:       decodedCount(func(x CrossRef) int { return len(x.Links) }),
			Unit:        [2]string{"link", "links"},
		},
		evaluationType(),
		chunksType(),
	}
}

// decodedCount counts a value decoded into T (0 when it does not decode).
func decodedCount[T any](count func(T) int) func(TypedValue) int {
	return func(v TypedValue) int {
		var x T
		if v.Decode(&x) != nil {
			return 0
		}
		return count(x)
	}
}

func describeFiles(v TypedValue) string {
	kind := v.ContentTypeHint
	if kind == "" || kind == ContentMixed {
		kind = "files"
	}
	n := 0
	if fc, err := v.Files(); err == nil {
		n = fc.Count()
	}
	return Plural(n, strings.TrimSuffix(kind, "s"), kind)
}

func describeFolders(v TypedValue) string {
	var f FolderResult
	_ = v.Decode(&f)
	return fmt.Sprintf("%s (%s moved)", Plural(len(f.Folders), "folder", "folders"), Plural(f.Moved, "file", "files"))
}

func describeText(v TypedValue) string {
	t, _ := v.Text()
	return fmt.Sprintf("text of %s", Plural(len([]rune(t)), "character", "characters"))
}

func categoryFacts(v TypedValue) map[string]any {
	var c Categorization
	if v.Decode(&c) != nil {
		return nil
	}
	sizes := make(map[string]int, len(c.Categories))
	for name, ids := range c.Categories {
		sizes[name] = len(ids)
	}
	return map[string]any{"categories": sizes}
}

func textFacts(v TypedValue) map[string]any {
	t, err := v.Text()
	if err != nil {
		return nil
	}
	return map[string]any{"preview": Clip(t, 160)}
}

func mergeFileIDs(a, b json.RawMessage) (json.RawMessage, error) {
	var fa, fb FileCollection
	if err := json.Unmarshal(a, &fa); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &fb); err != nil {
		return nil, err
	}
	m, err := Merge(fa, fb)
	if err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

func mergeCategorization(a, b json.RawMessage) (json.RawMessage, error) {
	var ca, cb Categorization
	if err := json.Unmarshal(a, &ca); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &cb); err != nil {
		return nil, err
	}
	out := Categorization{Categories: map[string][]string{}, Method: ca.Method}
	if cb.Method != ca.Method {
		out.Method = strings.Trim(ca.Method+"+"+cb.Method, "+")
	}
	for _, c := range []Categorization{ca, cb} {
		for name, ids := range c.Categories {
			out.Categories[name] = dedup(nil, append(append([]string(nil), out.Categories[name]...), ids...))
		}
	}
	return json.Marshal(out)
}
