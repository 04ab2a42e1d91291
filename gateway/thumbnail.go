package gateway

import (
	"bufio"
	"bytes"
	"errors"
	"image"
	_ "image/gif" // decode GIF for thumbnails
	"image/jpeg"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"

	"golang.org/x/image/draw"
	_ "golang.org/x/image/webp" // decode WebP for thumbnails

	"github.com/agentmesh/agentmesh/schemas"
)

// Thumbnails fit in a thumbSize square; an image larger than maxPixels is
// not decoded at all.
const (
	thumbSize = 256
	maxPixels = 50 << 20
)

// writeThumbnail writes a small copy of the image in rc: JPEG for a JPEG,
// PNG for anything else (keeping transparency). Something that is not an
// image the gateway can decode is invalid_input.
func writeThumbnail(w http.ResponseWriter, rc io.Reader, ref schemas.FileRef) error {
	br := bufio.NewReader(rc)
	head, _ := br.Peek(64 << 10)
	cfg, format, err := image.DecodeConfig(bytes.NewReader(head))
	if err != nil {
		return fail(schemas.CodeInvalidInput, "file %s (%s) is not an image the gateway can read (PNG, JPEG, GIF, WebP); ask for its content without ?thumb=1", ref.ID, orUnknown(ref.MediaType))
	}
	if cfg.Width*cfg.Height > maxPixels {
		return fail(schemas.CodeTooLarge, "image %s is %dx%d, too large to make a thumbnail of", ref.ID, cfg.Width, cfg.Height)
	}
	src, _, err := image.Decode(br)
	if err != nil {
		return fail(schemas.CodeInvalidInput, "image %s does not decode: %v", ref.ID, err)
	}
	dst := image.Image(src)
	b := src.Bounds()
	if b.Dx() > thumbSize || b.Dy() > thumbSize {
		tw, th := thumbSize, thumbSize
		if b.Dx() >= b.Dy() {
			th = max(1, b.Dy()*thumbSize/b.Dx())
		} else {
			tw = max(1, b.Dx()*thumbSize/b.Dy())
		}
		rgba := image.NewRGBA(image.Rect(0, 0, tw, th))
		draw.CatmullRom.Scale(rgba, rgba.Bounds(), src, b, draw.Src, nil)
		dst = rgba
	}
	w.Header().Set("Cache-Control", "private, max-age=3600")
	if format == "jpeg" {
		w.Header().Set("Content-Type", "image/jpeg")
		return jpeg.Encode(w, dst, &jpeg.Options{Quality: 80})
	}
	w.Header().Set("Content-Type", "image/png")
	return png.Encode(w, dst)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown type"
	}
	return s
}

// filePart returns the part named "file" of a multipart body; other parts
// before it are skipped, a body without it is invalid_input.
func (g *Gateway) filePart(body io.Reader, boundary string) (*multipart.Part, error) {
	if boundary == "" {
		return nil, fail(schemas.CodeInvalidInput, "multipart/form-data without a boundary")
	}
	mr := multipart.NewReader(body, boundary)
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil, fail(schemas.CodeInvalidInput, "the multipart body has no part named \"file\"; send the file as the form field file")
		}
		if err != nil {
			if ue := g.uploadError(err); ue != nil {
				var ae *apiError
				if errors.As(ue, &ae) {
					return nil, ae
				}
			}
			return nil, fail(schemas.CodeInvalidInput, "reading the multipart body: %v", err)
		}
		if p.FormName() == "file" {
			return p, nil
		}
		_ = p.Close()
	}
}
