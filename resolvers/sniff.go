package resolvers

import (
	"bytes"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/agentmesh/agentmesh/schemas"
)

// SniffLen is how many leading bytes SniffMediaType looks at.
const SniffLen = 512

// SniffMediaType returns the media type of content starting with head (its
// first SniffLen bytes are enough). The content decides, whatever the file is
// called: a JPEG named report.pdf is image/jpeg. The name only refines text
// (text/plain named .md is text/markdown, .csv text/csv, .json
// application/json) and names binary content nothing recognised (never as
// text or an image: those are always recognisable from their bytes).
func SniffMediaType(head []byte, filename string) string {
	if len(head) > SniffLen {
		head = head[:SniffLen]
	}
	if len(head) == 0 {
		return "application/octet-stream"
	}
	switch {
	case bytes.HasPrefix(head, []byte("%PDF-")):
		return "application/pdf"
	case len(head) >= 12 && bytes.Equal(head[:4], []byte("RIFF")) && bytes.Equal(head[8:12], []byte("WEBP")):
		return "image/webp"
	}
	ct := http.DetectContentType(head)
	ext := strings.ToLower(path.Ext(strings.ReplaceAll(filename, `\`, "/")))
	switch {
	case strings.HasPrefix(ct, "text/plain"):
		switch ext {
		case ".md", ".markdown":
			return "text/markdown; charset=utf-8"
		case ".csv":
			return "text/csv; charset=utf-8"
		case ".json":
			return "application/json"
		}
	case ct == "application/octet-stream" && ext != "":
		if byExt := mime.TypeByExtension(ext); byExt != "" && !strings.HasPrefix(byExt, "text/") && !strings.HasPrefix(byExt, "image/") {
			return byExt
		}
	}
	return ct
}

// GenericMediaType reports whether a sender's media type says nothing about
// the content: none, application/octet-stream, or a form encoding such as
// curl's default application/x-www-form-urlencoded. Such a type is replaced
// by SniffMediaType's.
func GenericMediaType(mediaType string) bool {
	mt, _, err := mime.ParseMediaType(mediaType)
	if err != nil {
		return true // unreadable: no better than none
	}
	switch mt {
	case "application/octet-stream", "application/x-www-form-urlencoded", "multipart/form-data", "binary/octet-stream", "application/unknown":
		return true
	}
	return false
}

// MediaKind maps a media type to the content type of a FileCollection:
// schemas.ContentImages for image/*, schemas.ContentLinks for URL lists,
// schemas.ContentDocuments for text, PDF and office formats, and "" for
// anything else.
func MediaKind(mediaType string) string {
	mt, _, _ := strings.Cut(strings.ToLower(mediaType), ";")
	mt = strings.TrimSpace(mt)
	switch {
	case strings.HasPrefix(mt, "image/"):
		return schemas.ContentImages
	case mt == "text/uri-list" || mt == "application/x-url" || mt == "text/x-uri":
		return schemas.ContentLinks
	case strings.HasPrefix(mt, "text/"), mt == "application/pdf", mt == "application/json",
		mt == "application/msword", mt == "application/rtf", mt == "application/epub+zip",
		strings.HasPrefix(mt, "application/vnd.openxmlformats-officedocument."),
		strings.HasPrefix(mt, "application/vnd.oasis.opendocument."),
		strings.HasPrefix(mt, "application/vnd.ms-"):
		return schemas.ContentDocuments
	}
	return ""
}
