package imagefeat_test

import (
	"encoding/binary"
	"hash/crc32"
	"io"
)

// encodePNGHeader writes a PNG signature and an IHDR chunk declaring w×h
// pixels, with no image data.
func encodePNGHeader(w io.Writer, width, height uint32) error {
	if _, err := w.Write([]byte("\x89PNG\r\n\x1a\n")); err != nil {
		return err
	}
	data := make([]byte, 13)
	binary.BigEndian.PutUint32(data[0:], width)
	binary.BigEndian.PutUint32(data[4:], height)
	data[8], data[9] = 8, 2 // 8-bit RGB
	chunk := append([]byte("IHDR"), data...)
	var b []byte
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	b = append(b, chunk...)
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(chunk))
	_, err := w.Write(b)
	return err
}
