package resolvers_test

import (
	"bytes"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/agents/builtin/samples"
	"github.com/agentmesh/agentmesh/resolvers"
)

func testImage() image.Image {
	img := image.NewPaletted(image.Rect(0, 0, 16, 16), color.Palette{color.Black, color.White})
	for i := range 16 {
		img.SetColorIndex(i, i, 1)
	}
	return img
}

func encodeImage(t testing.TB, format string) []byte {
	t.Helper()
	var buf bytes.Buffer
	var err error
	switch format {
	case "jpeg":
		err = jpeg.Encode(&buf, testImage(), nil)
	case "png":
		err = png.Encode(&buf, testImage())
	case "gif":
		err = gif.Encode(&buf, testImage(), nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSniffMediaType(t *testing.T) {
	tests := []struct {
		name     string
		content  []byte
		filename string
		want     string
	}{
		{"jpeg named pdf", encodeImage(t, "jpeg"), "report.pdf", "image/jpeg"},
		{"png named txt", encodeImage(t, "png"), "notes.txt", "image/png"},
		{"gif named jpg", encodeImage(t, "gif"), "photo.jpg", "image/gif"},
		{"pdf named png", samples.PDF("Report", "a one-page PDF"), "sunset.png", "application/pdf"},
		{"text named jpg", []byte("just some plain words\nand a second line\n"), "sunset.jpg", "text/plain"},
		{"html named txt", []byte("<!DOCTYPE html><html><body><p>hi</p></body></html>"), "readme.txt", "text/html"},
		{"html named md", []byte("<html><head><title>x</title></head></html>"), "readme.md", "text/html"},
		{"markdown", []byte("# Title\n\nSome *words*.\n"), "notes.md", "text/markdown"},
		{"markdown name on a png", encodeImage(t, "png"), "notes.md", "image/png"},
		{"webp", []byte("RIFF\x24\x00\x00\x00WEBPVP8 \x18\x00\x00\x00"), "x.gif", "image/webp"},
		{"empty", nil, "x.jpg", "application/octet-stream"},
		{"binary named jpg stays binary", []byte{0x00, 0x01, 0x02, 0x03, 0xfe}, "x.jpg", "application/octet-stream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := resolvers.SniffMediaType(tt.content, tt.filename)
			if mt, _, _ := strings.Cut(got, ";"); mt != tt.want {
				t.Errorf("SniffMediaType(%s as %q) = %q, want %q", tt.name, tt.filename, got, tt.want)
			}
		})
	}
}

func TestMediaKind(t *testing.T) {
	for mt, want := range map[string]string{
		"image/jpeg":                "images",
		"IMAGE/PNG":                 "images",
		"text/plain; charset=utf-8": "documents",
		"application/pdf":           "documents",
		"application/vnd.openxmlformats-officedocument.wordprocessingml.document": "documents",
		"text/uri-list":            "links",
		"application/octet-stream": "",
		"video/mp4":                "",
	} {
		if got := resolvers.MediaKind(mt); got != want {
			t.Errorf("MediaKind(%q) = %q, want %q", mt, got, want)
		}
	}
}

func TestGenericMediaType(t *testing.T) {
	for mt, want := range map[string]bool{
		"":                                  true,
		"application/octet-stream":          true,
		"application/x-www-form-urlencoded": true,
		"Application/X-WWW-Form-Urlencoded; charset=utf-8": true,
		"not a type;;":              true,
		"image/png":                 false,
		"text/plain; charset=utf-8": false,
		"application/pdf":           false,
	} {
		if got := resolvers.GenericMediaType(mt); got != want {
			t.Errorf("GenericMediaType(%q) = %v, want %v", mt, got, want)
		}
	}
}
