package samples_test

import (
	"bytes"
	"image"
	"strings"
	"testing"

	_ "image/jpeg"
	_ "image/png"

	"github.com/agentmesh/agentmesh/agents/builtin/samples"
)

func TestImagesAreDeterministicAndDistinct(t *testing.T) {
	a, b := samples.Images(), samples.Images()
	if len(a) != 17 {
		t.Fatalf("%d images, want 17", len(a))
	}
	fresh := samples.Draw(samples.SceneSunset, 64, 48, 99)
	again := samples.Draw(samples.SceneSunset, 64, 48, 99)
	if !bytes.Equal(fresh.Pix, again.Pix) {
		t.Error("Draw with the same seed gave different pixels")
	}
	names := map[string]bool{}
	scenes := map[string]int{}
	camera := 0
	for i := range a {
		if !bytes.Equal(a[i].Content, b[i].Content) {
			t.Errorf("%s differs between calls", a[i].Name)
		}
		if names[a[i].Name] {
			t.Errorf("duplicate name %s", a[i].Name)
		}
		names[a[i].Name] = true
		scenes[a[i].Scene]++
		if strings.HasPrefix(a[i].Name, "IMG_") || strings.HasPrefix(a[i].Name, "DSC_") {
			camera++
			if len(a[i].Tags) != 0 {
				t.Errorf("camera-named %s has tags %v", a[i].Name, a[i].Tags)
			}
		}
	}
	a[0].Content[100] ^= 0xff // a caller's copy is its own
	if c := samples.Images(); c[0].Content[100] == a[0].Content[100] {
		t.Error("Images returned shared bytes")
	}
	if scenes[samples.SceneSunset] != 5 || scenes[samples.SceneForest] != 4 || camera < 8 {
		t.Errorf("scenes %v, %d camera-named", scenes, camera)
	}
}

// No sample is a flat colour: every image has many distinct colours and
// noticeable variation between its rows.
func TestImagesAreNotSolid(t *testing.T) {
	for _, s := range samples.Images() {
		img, format, err := image.Decode(bytes.NewReader(s.Content))
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		if want := strings.TrimPrefix(s.MediaType, "image/"); format != want {
			t.Errorf("%s is %s, declared %s", s.Name, format, s.MediaType)
		}
		colours := map[[3]uint32]bool{}
		b := img.Bounds()
		for y := b.Min.Y; y < b.Max.Y; y += 3 {
			for x := b.Min.X; x < b.Max.X; x += 3 {
				r, g, bl, _ := img.At(x, y).RGBA()
				colours[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
			}
		}
		if len(colours) < 500 {
			t.Errorf("%s has only %d distinct colours", s.Name, len(colours))
		}
	}
}

func TestDocuments(t *testing.T) {
	docs := samples.Documents()
	types := map[string]bool{}
	for _, d := range docs {
		types[d.MediaType] = true
		if len(d.Content) == 0 {
			t.Errorf("%s is empty", d.Name)
		}
	}
	for _, mt := range []string{"text/plain", "text/markdown", "text/html", "application/pdf"} {
		if !types[mt] {
			t.Errorf("no %s document", mt)
		}
	}
}

func TestPDFStructure(t *testing.T) {
	pdf := samples.PDF("A (title)", "line \\ one")
	for _, want := range []string{"%PDF-1.4", "(A \\(title\\)) Tj", "(line \\\\ one) Tj", "xref", "startxref", "%%EOF"} {
		if !bytes.Contains(pdf, []byte(want)) {
			t.Errorf("PDF lacks %q", want)
		}
	}
	// startxref points at the xref table.
	i := bytes.LastIndex(pdf, []byte("startxref\n"))
	var off int
	for _, c := range pdf[i+len("startxref\n"):] {
		if c < '0' || c > '9' {
			break
		}
		off = off*10 + int(c-'0')
	}
	if !bytes.HasPrefix(pdf[off:], []byte("xref\n")) {
		t.Errorf("startxref %d does not point at the xref table", off)
	}
}

func TestMetadata(t *testing.T) {
	m := samples.Sample{Name: "a.jpg", Tags: []string{"x", "y z"}}.Metadata()
	if m["filename"] != "a.jpg" || m["tags"] != "x,y z" {
		t.Errorf("Metadata = %v", m)
	}
	if _, ok := (samples.Sample{Name: "b.jpg"}).Metadata()["tags"]; ok {
		t.Error("untagged sample has a tags key")
	}
}
