package schemas

// FileRef describes one stored file. Content never travels with it: the ID is
// resolved to bytes on demand through a resolver.
type FileRef struct {
	ID        string            `json:"id"`
	MediaType string            `json:"media_type,omitempty"`
	Filename  string            `json:"filename,omitempty"`
	Size      int64             `json:"size"`
	SHA256    string            `json:"sha256,omitempty"`
	Metadata  map[string]string `json:"metadata,omitempty"`
}
