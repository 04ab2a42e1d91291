package imagefeat

import (
	"bytes"
	"fmt"
	"image"
	_ "image/gif"  // registers the GIF decoder
	_ "image/jpeg" // registers the JPEG decoder
	_ "image/png"  // registers the PNG decoder

	_ "golang.org/x/image/webp" // registers the WebP decoder
)

// MaxPixels bounds the declared width×height of an image Decode accepts, so a
// small file claiming a huge canvas cannot exhaust memory.
const MaxPixels = 64 << 20

// Decode decodes a JPEG, PNG, GIF or WebP image and returns it with its format
// name. Content of another kind wraps ErrNotImage; a recognised but broken
// image wraps ErrCorrupt; a declared size over MaxPixels wraps ErrTooLarge.
func Decode(content []byte) (image.Image, string, error) {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(content))
	if err != nil {
		if err == image.ErrFormat {
			return nil, "", fmt.Errorf("%w: %s", ErrNotImage, sniffed(content))
		}
		return nil, format, fmt.Errorf("%w: %s header: %v", ErrCorrupt, formatName(format), err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, format, fmt.Errorf("%w: %s declares %dx%d pixels", ErrCorrupt, format, cfg.Width, cfg.Height)
	}
	if int64(cfg.Width)*int64(cfg.Height) > MaxPixels {
		return nil, format, fmt.Errorf("%w: %s declares %dx%d pixels, over the %d-pixel limit", ErrTooLarge, format, cfg.Width, cfg.Height, MaxPixels)
	}
	img, format, err := image.Decode(bytes.NewReader(content))
	if err != nil {
		return nil, format, fmt.Errorf("%w: %s: %v", ErrCorrupt, formatName(format), err)
	}
	return img, format, nil
}

// MediaType returns the MIME type of a format name returned by Decode.
func MediaType(format string) string {
	switch format {
	case "jpeg":
		return "image/jpeg"
	case "png":
		return "image/png"
	case "gif":
		return "image/gif"
	case "webp":
		return "image/webp"
	}
	return "application/octet-stream"
}

func formatName(format string) string {
	if format == "" {
		return "image"
	}
	return format
}

// sniffed describes unrecognised content briefly for an error message.
func sniffed(content []byte) string {
	if len(content) == 0 {
		return "the content is empty"
	}
	n := min(len(content), 8)
	return fmt.Sprintf("%d bytes starting with %q", len(content), content[:n])
}
