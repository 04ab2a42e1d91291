package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// defaultMaxUpload bounds one uploaded file unless WithMaxUpload says.
const defaultMaxUpload = 256 << 20

func (g *Gateway) handleFiles(w http.ResponseWriter, r *http.Request, c *conn) error {
	q := r.URL.Query()
	folder, kind := q.Get("folder"), q.Get("type")
	refs, err := c.files.Select(r.Context(), folder, kind)
	if err != nil {
		return meshError("listing files", err)
	}
	writeJSON(w, http.StatusOK, refs)
	return nil
}

// handlePutFile stores one file: the part named "file" of a
// multipart/form-data body, or the raw body with ?name=. ?folder= and
// ?tag= (repeatable) set its metadata, as agentmesh files put does.
func (g *Gateway) handlePutFile(w http.ResponseWriter, r *http.Request, c *conn) error {
	q := r.URL.Query()
	meta := map[string]string{}
	if tags := q["tag"]; len(tags) > 0 {
		meta[resolvers.MetaTags] = strings.Join(tags, ",")
	}
	if f := q.Get("folder"); f != "" {
		meta[resolvers.MetaFolder] = f
	}
	body := http.MaxBytesReader(w, r.Body, g.cfg.maxUpload)
	var (
		content   io.Reader
		name      = q.Get("name")
		mediaType string
	)
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "multipart/form-data" {
		part, err := g.filePart(body, params["boundary"])
		if err != nil {
			return err
		}
		defer part.Close()
		content = part
		if name == "" {
			name = part.FileName()
		}
		mediaType = part.Header.Get("Content-Type")
	} else {
		content = body
		mediaType = r.Header.Get("Content-Type") // a generic one is sniffed (resolvers.GenericMediaType)
	}
	name = filepath.Base(strings.ReplaceAll(name, "\\", "/"))
	if name == "" || name == "." || name == "/" {
		return fail(schemas.CodeInvalidInput, "the file has no name: give ?name=FILENAME (or a filename in the multipart part)")
	}
	meta[resolvers.MetaFilename] = name
	// Peek one byte so an empty upload is refused before anything is stored.
	var first [1]byte
	n, err := io.ReadFull(content, first[:])
	if err := g.uploadError(err); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return err
	}
	if n == 0 {
		return fail(schemas.CodeInvalidInput, "the file %q is empty; send its content as the body", name)
	}
	ref, err := c.files.Store(r.Context(), io.MultiReader(bytes.NewReader(first[:n]), content), mediaType, meta)
	if err != nil {
		if ue := g.uploadError(err); ue != nil {
			return ue
		}
		return meshError("storing "+name, err)
	}
	writeJSON(w, http.StatusCreated, ref)
	return nil
}

// uploadError turns an over-long body into too_large; EOF is no error.
func (g *Gateway) uploadError(err error) error {
	var mbe *http.MaxBytesError
	switch {
	case err == nil, errors.Is(err, io.EOF):
		return nil
	case errors.As(err, &mbe):
		return fail(schemas.CodeTooLarge, "the file is over %d bytes, the gateway's upload limit; store it with agentmesh files put", g.cfg.maxUpload)
	}
	return err
}

func (g *Gateway) handleFile(w http.ResponseWriter, r *http.Request, c *conn) error {
	id := r.PathValue("id")
	if err := checkFileID(id); err != nil {
		return err
	}
	ref, err := c.files.ResolveMetadata(r.Context(), id)
	if err != nil {
		return fileError(id, err)
	}
	writeJSON(w, http.StatusOK, ref)
	return nil
}

func (g *Gateway) handleFileContent(w http.ResponseWriter, r *http.Request, c *conn) error {
	id := r.PathValue("id")
	if err := checkFileID(id); err != nil {
		return err
	}
	thumb, err := boolParam(r, "thumb", false)
	if err != nil {
		return err
	}
	rc, ref, err := c.files.Open(r.Context(), id)
	if err != nil {
		return fileError(id, err)
	}
	defer rc.Close()
	if ref.SHA256 != "" {
		etag := `"` + ref.SHA256 + map[bool]string{true: "-thumb"}[thumb] + `"`
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return nil
		}
	}
	if thumb {
		return writeThumbnail(w, rc, ref)
	}
	ct := ref.MediaType
	if ct == "" {
		ct = "application/octet-stream"
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("Content-Length", strconv.FormatInt(ref.Size, 10))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; frame-ancestors 'none'") // a stored file's scripts never run as the gateway's page
	if ref.Filename != "" {
		h.Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": ref.Filename}))
	}
	_, _ = io.Copy(w, rc)
	return nil
}

// checkFileID refuses an id that cannot name a stored file.
func checkFileID(id string) error {
	if id == "" || len(id) > 128 || strings.ContainsAny(id, " /\\\t\n") || strings.HasPrefix(id, resolvers.CollectionPrefix) {
		return fail(schemas.CodeInvalidInput, "file id %q: give the id of a stored file (f-...); GET /api/files lists them", id)
	}
	return nil
}

func fileError(id string, err error) error {
	if errors.Is(err, resolvers.ErrNotFound) {
		return fail(schemas.CodeNotFound, "no file %q; GET /api/files lists them", id)
	}
	return meshError(fmt.Sprintf("reading file %s", id), err)
}
