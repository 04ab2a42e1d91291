package samples

import "strings"

// Sample is one generated file.
type Sample struct {
	Name      string   // filename, e.g. "IMG_0042.jpg"
	MediaType string   // MIME type of Content
	Content   []byte   // the file's bytes
	Tags      []string // tags a person would give it; empty for camera-named images
	// Scene is the category an image was drawn as (sunset, forest,
	// seascape, night, snow); empty for documents. Tests grade analysis
	// against it; it is not meant to be stored with the file.
	Scene string
}

// Metadata is the metadata to store the sample with: its filename and, when
// it has tags, "tags" as a comma-separated list.
func (s Sample) Metadata() map[string]string {
	m := map[string]string{"filename": s.Name}
	if len(s.Tags) > 0 {
		m["tags"] = strings.Join(s.Tags, ",")
	}
	return m
}
