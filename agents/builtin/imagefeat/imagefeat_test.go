package imagefeat_test

import (
	"bytes"
	"errors"
	"image"
	"image/color/palette"
	"image/draw"
	"image/gif"
	"os"
	"testing"

	"github.com/agentmesh/agentmesh/agents/builtin/imagefeat"
	"github.com/agentmesh/agentmesh/agents/builtin/samples"
)

// Every generated sample lands in the scene it was drawn as.
func TestCategoryOfSamples(t *testing.T) {
	correct := 0
	all := samples.Images()
	for _, s := range all {
		img, format, err := imagefeat.Decode(s.Content)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		if got := imagefeat.MediaType(format); got != s.MediaType {
			t.Errorf("%s: decoded as %s, stored as %s", s.Name, got, s.MediaType)
		}
		f := imagefeat.Extract(img)
		if got := f.Category(); got != s.Scene {
			t.Errorf("%s: category %q, drawn as %q (features %+v)", s.Name, got, s.Scene, f)
			continue
		}
		correct++
	}
	t.Logf("%d of %d sample images categorised as drawn", correct, len(all))
}

func TestFeaturesOfSunsetAndForest(t *testing.T) {
	sunset := imagefeat.Extract(samples.Draw(samples.SceneSunset, 320, 240, 3))
	forest := imagefeat.Extract(samples.Draw(samples.SceneForest, 240, 320, 7))
	if sunset.HueName() != "orange" || sunset.Warm < 0.3 || sunset.TopBrightness <= sunset.BottomBrightness {
		t.Errorf("sunset features: hue %s, warm %.2f, top %.2f bottom %.2f", sunset.HueName(), sunset.Warm, sunset.TopBrightness, sunset.BottomBrightness)
	}
	if forest.HueName() != "green" || forest.Green < 0.5 {
		t.Errorf("forest features: hue %s, green %.2f", forest.HueName(), forest.Green)
	}
	if sunset.Orientation() != "landscape" || forest.Orientation() != "portrait" {
		t.Errorf("orientations %q and %q", sunset.Orientation(), forest.Orientation())
	}
	if sunset.Width != 320 || sunset.Height != 240 {
		t.Errorf("size %dx%d", sunset.Width, sunset.Height)
	}
	words := map[string]bool{}
	for _, w := range sunset.Words() {
		words[w] = true
	}
	for _, w := range []string{"sunset", "warm", "orange", "dusk"} {
		if !words[w] {
			t.Errorf("sunset words %v lack %q", sunset.Words(), w)
		}
	}
}

func TestDecodeGIF(t *testing.T) {
	src := samples.Draw(samples.SceneSeascape, 160, 120, 11)
	pal := image.NewPaletted(src.Bounds(), palette.Plan9)
	draw.FloydSteinberg.Draw(pal, src.Bounds(), src, image.Point{})
	var buf bytes.Buffer
	if err := gif.Encode(&buf, pal, nil); err != nil {
		t.Fatal(err)
	}
	img, format, err := imagefeat.Decode(buf.Bytes())
	if err != nil || format != "gif" {
		t.Fatalf("Decode GIF: %q, %v", format, err)
	}
	if got := imagefeat.Extract(img).Category(); got != imagefeat.Seascape {
		t.Errorf("GIF seascape categorised as %q", got)
	}
}

// testdata/sunset.webp was made from samples.Draw(SceneSunset, 160, 120, 3)
// with cwebp, since Go has no WebP encoder.
func TestDecodeWebP(t *testing.T) {
	b, err := os.ReadFile("testdata/sunset.webp")
	if err != nil {
		t.Fatal(err)
	}
	img, format, err := imagefeat.Decode(b)
	if err != nil || format != "webp" {
		t.Fatalf("Decode WebP: %q, %v", format, err)
	}
	if got := imagefeat.Extract(img).Category(); got != imagefeat.Sunset {
		t.Errorf("WebP sunset categorised as %q", got)
	}
}

func TestDecodeBadContent(t *testing.T) {
	jpg := samples.Images()[2].Content
	tests := []struct {
		name    string
		content []byte
		want    error
	}{
		{"empty", nil, imagefeat.ErrNotImage},
		{"text", []byte("hello, this is not a picture"), imagefeat.ErrNotImage},
		{"truncated jpeg", jpg[:len(jpg)/3], imagefeat.ErrCorrupt},
		{"jpeg header only", jpg[:20], imagefeat.ErrCorrupt},
		{"png magic then garbage", append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 64)...), imagefeat.ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := imagefeat.Decode(tt.content)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Decode: %v, want %v", err, tt.want)
			}
		})
	}
}

// A tiny PNG that declares an enormous canvas is refused before decoding.
func TestDecodeRefusesHugeCanvas(t *testing.T) {
	var buf bytes.Buffer
	if err := encodePNGHeader(&buf, 100000, 100000); err != nil {
		t.Fatal(err)
	}
	_, _, err := imagefeat.Decode(buf.Bytes())
	if !errors.Is(err, imagefeat.ErrTooLarge) {
		t.Fatalf("Decode: %v, want ErrTooLarge", err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range samples.Images()[:3] {
		f.Add(s.Content[:min(len(s.Content), 2048)])
	}
	f.Add([]byte("GIF89a"))
	f.Fuzz(func(t *testing.T, b []byte) {
		img, _, err := imagefeat.Decode(b)
		if err == nil {
			imagefeat.Extract(img).Words()
		}
	})
}
