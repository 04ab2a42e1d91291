package imagefeat

import "errors"

var (
	// ErrNotImage reports content that no registered decoder recognises.
	ErrNotImage = errors.New("not a decodable image (want JPEG, PNG, GIF or WebP)")
	// ErrCorrupt reports an image whose header was recognised but whose
	// pixels could not be decoded.
	ErrCorrupt = errors.New("corrupt image")
	// ErrTooLarge reports an image whose declared size exceeds MaxPixels.
	ErrTooLarge = errors.New("image too large")
)
