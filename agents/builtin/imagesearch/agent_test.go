package imagesearch_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/agents/builtin/imagesearch"
	"github.com/agentmesh/agentmesh/agents/builtin/samples"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

type stored struct {
	store  *resolvers.ObjectStore
	ids    map[string]string // by filename
	scenes map[string]string // id → scene drawn
}

func storeImages(t *testing.T) stored {
	t.Helper()
	s := stored{
		store:  resolvers.NewObjectStore(bustest.Start(t).Provision(t).Files),
		ids:    map[string]string{},
		scenes: map[string]string{},
	}
	put := func(name, mediaType string, content []byte, meta map[string]string) string {
		ref, err := s.store.Store(context.Background(), bytes.NewReader(content), mediaType, meta)
		if err != nil {
			t.Fatal(err)
		}
		s.ids[name] = ref.ID
		return ref.ID
	}
	for _, img := range samples.Images() {
		s.scenes[put(img.Name, img.MediaType, img.Content, img.Metadata())] = img.Scene
	}
	put("notes.txt", "text/plain", []byte("sunset notes"), map[string]string{"filename": "notes.txt"})
	return s
}

func run(t *testing.T, a *imagesearch.Agent, params map[string]any, scope ...string) (schemas.AgentResult, []string) {
	t.Helper()
	ec := schemas.NewExecutionContext(nil)
	ec.SetParams(params)
	if scope != nil {
		if err := ec.Put("scope", schemas.FilesValue(schemas.FromIDs(schemas.ContentImages, scope...), "test")); err != nil {
			t.Fatal(err)
		}
	}
	res, err := a.Execute(context.Background(), ec)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Success {
		return res, nil
	}
	fc, err := res.Outputs["images"].Files()
	if err != nil {
		t.Fatal(err)
	}
	return res, fc.IDs()
}

// "sunset" finds every sunset, the camera-named ones through their pixels,
// tagged ones first, and nothing else.
func TestSearchSunsetFindsCameraNamedImages(t *testing.T) {
	s := storeImages(t)
	a, err := imagesearch.New(s.store)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Contract().Validate(); err != nil {
		t.Fatal(err)
	}
	res, got := run(t, a, map[string]any{"query": "Find sunset images and organize them into folders"})
	var sunsets []string
	for id, scene := range s.scenes {
		if scene == samples.SceneSunset {
			sunsets = append(sunsets, id)
		}
	}
	for _, id := range got {
		if s.scenes[id] != samples.SceneSunset {
			t.Errorf("found %s, a %s image", id, s.scenes[id])
		}
	}
	for _, name := range []string{"IMG_0042.jpg", "IMG_0107.jpg", "DSC_1893.jpg", "sunset_beach.jpg", "golden_hour_sunset.png"} {
		if !slices.Contains(got, s.ids[name]) {
			t.Errorf("%s not found", name)
		}
	}
	if len(got) != len(sunsets) {
		t.Errorf("found %d, want the %d sunsets", len(got), len(sunsets))
	}
	// Tagged and named sunsets outrank those found by pixels alone.
	if len(got) == 5 && !slices.Contains(got[:2], s.ids["sunset_beach.jpg"]) {
		t.Errorf("ranking %v: sunset_beach.jpg not in the top two", got)
	}
	if !strings.HasPrefix(res.Summary, "found 5 images for ") {
		t.Errorf("summary %q", res.Summary)
	}

	// The visual words were cached in the metadata.
	ref, err := s.store.ResolveMetadata(context.Background(), s.ids["IMG_0042.jpg"])
	if err != nil {
		t.Fatal(err)
	}
	if ref.Metadata[imagesearch.MetaVisualVersion] != imagesearch.VisualVersion || !strings.Contains(ref.Metadata[imagesearch.MetaVisual], "sunset") {
		t.Errorf("IMG_0042.jpg metadata %v", ref.Metadata)
	}

	// Other scenes by their pixels too.
	for query, scene := range map[string]string{"forests": samples.SceneForest, "night city lights": samples.SceneNight, "winter snow": samples.SceneSnow, "ocean": samples.SceneSeascape} {
		_, got := run(t, a, map[string]any{"query": query})
		if len(got) == 0 {
			t.Errorf("%q found nothing", query)
		}
		for _, id := range got {
			if s.scenes[id] != scene {
				t.Errorf("%q found a %s image", query, s.scenes[id])
			}
		}
	}
}

func TestSearchScopeLimitAndFolder(t *testing.T) {
	s := storeImages(t)
	a, _ := imagesearch.New(s.store)
	ctx := context.Background()
	if _, err := s.store.UpdateMetadata(ctx, s.ids["IMG_0051.jpg"], func(m map[string]string) { m["folder"] = "holiday" }); err != nil {
		t.Fatal(err)
	}
	_, got := run(t, a, map[string]any{"query": "holiday"})
	if !slices.Contains(got, s.ids["IMG_0051.jpg"]) || !slices.Contains(got, s.ids["sunset_beach.jpg"]) {
		t.Errorf("holiday: %v, want the folder's image and the tagged one", got)
	}
	_, got = run(t, a, map[string]any{"query": "sunset", "limit": 2})
	if len(got) != 2 {
		t.Errorf("limit 2 gave %d", len(got))
	}

	// A scope restricts the search; missing IDs and non-images are skipped
	// and named.
	res, got := run(t, a, map[string]any{"query": "sunset"}, s.ids["IMG_0042.jpg"], s.ids["forest_trail.jpg"], "f-doesnotexist", s.ids["notes.txt"])
	if !slices.Equal(got, []string{s.ids["IMG_0042.jpg"]}) {
		t.Errorf("scoped search: %v", got)
	}
	for _, want := range []string{"skipped 2 scope ids", `"f-doesnotexist"`, "file not found", "text/plain", "not an image"} {
		if !strings.Contains(res.Summary, want) {
			t.Errorf("summary lacks %q: %s", want, res.Summary)
		}
	}
	res, _ = run(t, a, map[string]any{"query": "sunset"}, "f-doesnotexist", "collections/abc")
	if res.Success || res.Error.Code != schemas.CodeNotFound || !strings.Contains(res.Error.Message, "f-doesnotexist") {
		t.Errorf("all-missing scope: %+v", res)
	}
}

// A corrupt image stored as JPEG is searched by name only, reported, and
// remembered so it is not decoded again.
func TestSearchCorruptImage(t *testing.T) {
	s := storeImages(t)
	ctx := context.Background()
	ref, err := s.store.Store(ctx, bytes.NewReader([]byte("\xff\xd8\xff\xe0 truncated sunset")), "image/jpeg", map[string]string{"filename": "broken_sunset.jpg"})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := imagesearch.New(s.store)
	res, got := run(t, a, map[string]any{"query": "sunset"})
	if !slices.Contains(got, ref.ID) || len(got) != 6 {
		t.Errorf("got %d ids, want the 5 sunsets and broken_sunset.jpg by name", len(got))
	}
	if !strings.Contains(res.Summary, "1 image could not be decoded") {
		t.Errorf("summary %q", res.Summary)
	}
	meta, _ := s.store.ResolveMetadata(ctx, ref.ID)
	if !strings.Contains(meta.Metadata[imagesearch.MetaVisualError], "corrupt image") {
		t.Errorf("metadata %v", meta.Metadata)
	}
	res, _ = run(t, a, map[string]any{"query": "sunset"})
	if !strings.Contains(res.Summary, "1 image could not be decoded") {
		t.Errorf("second search summary %q", res.Summary)
	}
}

func TestScore(t *testing.T) {
	ref := schemas.FileRef{Filename: "beach_day.jpg", Metadata: map[string]string{"tags": "holiday", "caption": "kids on the sand"}}
	tests := []struct {
		query  string
		visual string
		want   float64
	}{
		{"beach", "", 3 + 1},
		{"sand", "", 2 + 1},
		{"sunset", "sunset warm orange", 1.5 + 1},
		{"beach sunset", "", 3},
		{"beach sunset", "sunset", 3 + 1.5 + 2},
		{"forest", "sunset", 0},
	}
	for _, tt := range tests {
		terms := strings.Fields(tt.query)
		if got := imagesearch.Score(terms, ref, tt.visual); got != tt.want {
			t.Errorf("Score(%q, visual %q) = %v, want %v", tt.query, tt.visual, got, tt.want)
		}
	}
}
