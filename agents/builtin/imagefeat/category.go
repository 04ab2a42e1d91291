package imagefeat

import "strings"

// Categories named by Category, in the order their rules are tried.
const (
	Night    = "night"
	Snow     = "snow"
	Sunset   = "sunset"
	Forest   = "forest"
	Seascape = "seascape"
	Other    = "other"
)

// Category names the scene the features most look like. The rules, tried in
// order:
//
//   - night: mostly dark (mean luma under 0.25 and over half the pixels dark);
//   - snow: over 40% pale, bright pixels;
//   - sunset: warm hues cover over 30% of the picture and outnumber green and
//     blue, with a bright sky over a darker foreground or a strong glow;
//   - forest: green covers over 30% and outnumbers blue;
//   - seascape: blue covers over 35%;
//   - other: everything else.
func (f Features) Category() string {
	switch {
	case f.Brightness < 0.25 && f.Dark > 0.5:
		return Night
	case f.Snowy > 0.40:
		return Snow
	case f.Warm > 0.30 && f.Warm > f.Green && f.Warm > f.Blue &&
		(f.TopBrightness > f.BottomBrightness+0.05 || f.Colourfulness > 0.6):
		return Sunset
	case f.Green > 0.30 && f.Green > f.Blue:
		return Forest
	case f.Blue > 0.35:
		return Seascape
	}
	return Other
}

// categoryWords are the words a person might search for a category with.
var categoryWords = map[string][]string{
	Night:    {"night", "dark", "evening", "city", "lights", "urban", "nightscape"},
	Snow:     {"snow", "snowy", "winter", "white", "cold", "ice"},
	Sunset:   {"sunset", "sunrise", "dusk", "dawn", "golden", "hour", "warm", "sky", "sun"},
	Forest:   {"forest", "trees", "tree", "woods", "woodland", "green", "nature"},
	Seascape: {"seascape", "sea", "ocean", "water", "waves", "coast", "beach", "blue"},
}

// Words are the visual descriptors of the features: the category's search
// words, the dominant hue's name, and words for warmth, brightness,
// colourfulness and orientation. They are what image search matches a
// query against when neither the filename nor the tags say it.
func (f Features) Words() []string {
	seen := map[string]bool{}
	var out []string
	add := func(ws ...string) {
		for _, w := range ws {
			if w != "" && !seen[w] {
				seen[w] = true
				out = append(out, w)
			}
		}
	}
	cat := f.Category()
	if cat != Other {
		add(cat)
		add(categoryWords[cat]...)
	}
	add(f.HueName())
	switch {
	case f.Warm > 0.30:
		add("warm")
	case f.Blue+f.Green > 0.30:
		add("cool")
	}
	switch {
	case f.Brightness < 0.30:
		add("dark")
	case f.Brightness > 0.65:
		add("bright")
	}
	switch {
	case f.Colourfulness > 0.5:
		add("colourful", "colorful", "vivid")
	case f.Colourfulness < 0.15:
		add("muted")
	}
	add(f.Orientation())
	return out
}

// WordString joins Words with spaces, the form cached in file metadata.
func (f Features) WordString() string { return strings.Join(f.Words(), " ") }
