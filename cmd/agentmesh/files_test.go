package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/schemas"
)

// runCLI runs the command line in-process and returns stdout, stderr and the
// exit status.
func runCLI(t *testing.T, url string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(append([]string{"--nats", url}, args...), &out, &errOut)
	return out.String(), errOut.String(), code
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func pngBytes(t *testing.T) []byte {
	img := image.NewGray(image.Rect(0, 0, 8, 8))
	img.Set(1, 1, color.White)
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestFilesCommands(t *testing.T) {
	url := bustest.Start(t).URL()
	dir := t.TempDir()
	pic := pngBytes(t)
	writeFile(t, filepath.Join(dir, "in", "sunset.png"), pic)
	writeFile(t, filepath.Join(dir, "in", "notes.txt"), []byte("plain notes\n"))
	writeFile(t, filepath.Join(dir, "in", "deep", "misnamed.pdf"), []byte("<html><body>not a pdf</body></html>"))

	// put a directory: one "ID<TAB>path" line per file.
	out, errOut, code := runCLI(t, url, "files", "put", filepath.Join(dir, "in"), "--tag", "holiday", "--tag", "2024", "--folder", "inbox")
	if code != 0 {
		t.Fatalf("put dir: exit %d, stderr %q", code, errOut)
	}
	ids := map[string]string{} // base name -> id
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		id, path, ok := strings.Cut(line, "\t")
		if !ok || !strings.HasPrefix(id, "f-") {
			t.Fatalf("put printed %q, want ID<TAB>path", line)
		}
		ids[filepath.Base(path)] = id
	}
	if len(ids) != 3 {
		t.Fatalf("put stored %d files, want 3: %q", len(ids), out)
	}

	// put a glob with --json.
	writeFile(t, filepath.Join(dir, "g", "a.txt"), []byte("a"))
	writeFile(t, filepath.Join(dir, "g", "b.txt"), []byte("b"))
	out, errOut, code = runCLI(t, url, "--json", "files", "put", filepath.Join(dir, "g", "*.txt"))
	if code != 0 {
		t.Fatalf("put glob: exit %d, stderr %q", code, errOut)
	}
	var refs []schemas.FileRef
	if err := json.Unmarshal([]byte(out), &refs); err != nil || len(refs) != 2 {
		t.Fatalf("put --json printed %q (%v), want 2 FileRefs", out, err)
	}
	if refs[0].Filename != "a.txt" || refs[0].Size != 1 || refs[0].SHA256 == "" {
		t.Fatalf("put --json ref: %+v", refs[0])
	}

	// A pattern that matches nothing is an error naming it.
	_, errOut, code = runCLI(t, url, "files", "put", filepath.Join(dir, "*.nothing"))
	if code == 0 || !strings.Contains(errOut, "*.nothing") {
		t.Fatalf("put of an empty glob: exit %d, stderr %q", code, errOut)
	}

	// ls: the table, then filters.
	out, errOut, code = runCLI(t, url, "files", "ls")
	if code != 0 {
		t.Fatalf("ls: exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"ID", "NAME", "TYPE", "SIZE", "FOLDER", "TAGS", "sunset.png", "image/png", "inbox", "holiday,2024", "a.txt", ids["notes.txt"]} {
		if !strings.Contains(out, want) {
			t.Errorf("ls output lacks %q:\n%s", want, out)
		}
	}
	out, _, _ = runCLI(t, url, "files", "ls", "--type", "images")
	if !strings.Contains(out, "sunset.png") || strings.Contains(out, "notes.txt") || strings.Contains(out, "misnamed.pdf") {
		t.Errorf("ls --type images:\n%s", out)
	}
	out, _, _ = runCLI(t, url, "files", "ls", "--type", "text/html")
	if !strings.Contains(out, "misnamed.pdf") || strings.Contains(out, "sunset.png") {
		t.Errorf("ls --type text/html (the sniffed type of misnamed.pdf):\n%s", out)
	}
	out, _, _ = runCLI(t, url, "files", "ls", "--folder", "inbox")
	if strings.Contains(out, "a.txt") || !strings.Contains(out, "notes.txt") {
		t.Errorf("ls --folder inbox:\n%s", out)
	}
	out, _, _ = runCLI(t, url, "--json", "files", "ls", "--type", "documents")
	refs = nil
	if err := json.Unmarshal([]byte(out), &refs); err != nil || len(refs) != 4 {
		t.Errorf("ls --json --type documents: %v, %d refs, want 4 (notes, html, a, b):\n%s", err, len(refs), out)
	}

	// info and get.
	sum := sha256.Sum256(pic)
	out, errOut, code = runCLI(t, url, "files", "info", ids["sunset.png"])
	if code != 0 || !strings.Contains(out, hex.EncodeToString(sum[:])) || !strings.Contains(out, "image/png") || !strings.Contains(out, "folder:") {
		t.Fatalf("info: exit %d, out %q, stderr %q", code, out, errOut)
	}
	out, errOut, code = runCLI(t, url, "files", "get", ids["sunset.png"])
	if code != 0 || out != string(pic) {
		t.Fatalf("get to stdout: exit %d, %d bytes, stderr %q", code, len(out), errOut)
	}
	dst := filepath.Join(dir, "copy.png")
	if _, errOut, code = runCLI(t, url, "files", "get", ids["sunset.png"], "-o", dst); code != 0 {
		t.Fatalf("get -o: exit %d, stderr %q", code, errOut)
	}
	if b, err := os.ReadFile(dst); err != nil || !bytes.Equal(b, pic) {
		t.Fatalf("get -o wrote %d bytes, %v", len(b), err)
	}

	// rm, then the file is gone with a clear error.
	if out, errOut, code = runCLI(t, url, "files", "rm", ids["notes.txt"]); code != 0 || !strings.Contains(out, ids["notes.txt"]) {
		t.Fatalf("rm: exit %d, out %q, stderr %q", code, out, errOut)
	}
	for _, sub := range []string{"info", "get", "rm"} {
		_, errOut, code = runCLI(t, url, "files", sub, ids["notes.txt"])
		if code == 0 || !strings.Contains(errOut, "not found") || !strings.Contains(errOut, ids["notes.txt"]) {
			t.Errorf("%s of a removed file: exit %d, stderr %q", sub, code, errOut)
		}
	}
	missing := filepath.Join(dir, "nope.png")
	if _, errOut, code = runCLI(t, url, "files", "get", "f-doesnotexist", "-o", missing); code == 0 {
		t.Fatal("get of a missing id succeeded")
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("get of a missing id left %s behind", missing)
	}
}
