package schemas

// FileRef describes one stored file. Content never travels with it: the ID is
// resolved to bytes on demand through a resolver. Store names the object
// store bucket the file lives in when it is a client's own (e.g.
// mesh_files_alice on a secure mesh); absent, the mesh's shared bucket.
type FileRef struct {
	ID        string            `json:"id"`
	MediaType string            `json:"media_type,omitempty"`
	Filename  string            `json:"filename,omitempty"`
	Size      int64             `json:"size"`
	SHA256    string            `json:"sha256,omitempty"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	Store     string            `json:"store,omitempty"`
}
