package imagefeat

import (
	"image"
	"image/color"
	"math"
)

// sampleGrid is the most points Extract samples along each axis; larger
// images are read on a regular grid, which keeps the cost per image bounded.
const sampleGrid = 160

// Features are what Extract measures from an image's pixels. Fractions are
// shares of the sampled pixels, from 0 to 1.
type Features struct {
	Width  int `json:"width"`
	Height int `json:"height"`

	// Brightness is the mean luma, 0 (black) to 1 (white).
	Brightness float64 `json:"brightness"`
	// TopBrightness and BottomBrightness are the mean luma of the top and
	// bottom thirds.
	TopBrightness    float64 `json:"top_brightness"`
	BottomBrightness float64 `json:"bottom_brightness"`
	// Saturation is the mean HSV saturation.
	Saturation float64 `json:"saturation"`
	// Colourfulness is the Hasler–Süsstrunk metric divided by 100: about 0
	// for grey pictures, about 1 for very colourful ones.
	Colourfulness float64 `json:"colourfulness"`
	// DominantHue is the centre in degrees of the 30° hue band holding most
	// saturated, lit pixels; meaningful only when Chromatic is not tiny.
	DominantHue float64 `json:"dominant_hue"`
	// Chromatic is the share of clearly coloured pixels (saturation > 0.25,
	// value > 0.2); Warm, Green and Blue split them by hue.
	Chromatic float64 `json:"chromatic"`
	Warm      float64 `json:"warm"`  // red, orange, yellow hues
	Green     float64 `json:"green"` // yellow-green to green-cyan hues
	Blue      float64 `json:"blue"`  // cyan to blue hues
	// Dark is the share of pixels whose brightest channel is under 18%.
	Dark float64 `json:"dark"`
	// Snowy is the share of pale, bright pixels (saturation < 0.15, value > 0.72).
	Snowy float64 `json:"snowy"`
}

// Extract measures an image's features on a grid of at most 160×160 points.
//
// It is long because one pass over the grid gathers every feature; a pass
// per feature would read each pixel several times.
func Extract(img image.Image) Features {
	b := img.Bounds()
	f := Features{Width: b.Dx(), Height: b.Dy()}
	if f.Width == 0 || f.Height == 0 {
		return f
	}
	nx, ny := min(f.Width, sampleGrid), min(f.Height, sampleGrid)

	var (
		n, nTop, nBottom             float64
		sumL, sumTop, sumBottom      float64
		sumS                         float64
		sumRG, sumYB, sumRG2, sumYB2 float64
		chromatic, warm, green, blu  float64
		dark, snowy                  float64
		hueWeight                    [12]float64
	)
	for j := range ny {
		y := b.Min.Y + (j*f.Height+f.Height/2)/ny
		third := j * 3 / ny // 0 top, 1 middle, 2 bottom
		for i := range nx {
			x := b.Min.X + (i*f.Width+f.Width/2)/nx
			r, g, bl := rgb(img.At(x, y))
			h, s, v := hsv(r, g, bl)
			l := 0.299*r + 0.587*g + 0.114*bl

			n++
			sumL += l
			sumS += s
			switch third {
			case 0:
				nTop++
				sumTop += l
			case 2:
				nBottom++
				sumBottom += l
			}
			rg := (r - g) * 255
			yb := (0.5*(r+g) - bl) * 255
			sumRG += rg
			sumYB += yb
			sumRG2 += rg * rg
			sumYB2 += yb * yb

			if v < 0.18 {
				dark++
			}
			if s < 0.15 && v > 0.72 {
				snowy++
			}
			if s > 0.25 && v > 0.2 {
				chromatic++
				hueWeight[int(h/30)%12] += s * v
				switch {
				case h < 70 || h >= 330:
					warm++
				case h < 170:
					green++
				case h < 260:
					blu++
				}
			}
		}
	}

	f.Brightness = sumL / n
	f.TopBrightness = safeDiv(sumTop, nTop)
	f.BottomBrightness = safeDiv(sumBottom, nBottom)
	f.Saturation = sumS / n
	mRG, mYB := sumRG/n, sumYB/n
	sdRG := math.Sqrt(math.Max(0, sumRG2/n-mRG*mRG))
	sdYB := math.Sqrt(math.Max(0, sumYB2/n-mYB*mYB))
	f.Colourfulness = (math.Hypot(sdRG, sdYB) + 0.3*math.Hypot(mRG, mYB)) / 100
	f.Chromatic = chromatic / n
	f.Warm = warm / n
	f.Green = green / n
	f.Blue = blu / n
	f.Dark = dark / n
	f.Snowy = snowy / n
	best := 0
	for k, w := range hueWeight {
		if w > hueWeight[best] {
			best = k
		}
	}
	f.DominantHue = float64(best*30 + 15)
	return round(f)
}

// Orientation is "landscape", "portrait" or "square" (within 5%).
func (f Features) Orientation() string {
	switch {
	case f.Width == 0 || f.Height == 0:
		return ""
	case math.Abs(float64(f.Width-f.Height)) <= 0.05*float64(max(f.Width, f.Height)):
		return "square"
	case f.Width > f.Height:
		return "landscape"
	default:
		return "portrait"
	}
}

// HueName names DominantHue ("orange", "blue", ...), or "grey" when fewer
// than 10% of the pixels are clearly coloured.
func (f Features) HueName() string {
	if f.Chromatic < 0.10 {
		return "grey"
	}
	h := f.DominantHue
	switch {
	case h < 15 || h >= 345:
		return "red"
	case h < 45:
		return "orange"
	case h < 70:
		return "yellow"
	case h < 170:
		return "green"
	case h < 200:
		return "cyan"
	case h < 260:
		return "blue"
	case h < 300:
		return "purple"
	default:
		return "magenta"
	}
}

// Map returns the numeric features by name, for an ANALYSIS_RESULT item.
func (f Features) Map() map[string]float64 {
	return map[string]float64{
		"width":             float64(f.Width),
		"height":            float64(f.Height),
		"brightness":        f.Brightness,
		"top_brightness":    f.TopBrightness,
		"bottom_brightness": f.BottomBrightness,
		"saturation":        f.Saturation,
		"colourfulness":     f.Colourfulness,
		"dominant_hue":      f.DominantHue,
		"chromatic":         f.Chromatic,
		"warm":              f.Warm,
		"green":             f.Green,
		"blue":              f.Blue,
		"dark":              f.Dark,
		"snowy":             f.Snowy,
	}
}

func rgb(c color.Color) (r, g, b float64) {
	r16, g16, b16, a16 := c.RGBA()
	if a16 == 0 {
		return 0, 0, 0
	}
	// Un-premultiply so translucent pixels keep their hue.
	return float64(r16) / float64(a16), float64(g16) / float64(a16), float64(b16) / float64(a16)
}

// hsv converts RGB in [0,1] to hue in degrees [0,360), saturation and value.
func hsv(r, g, b float64) (h, s, v float64) {
	mx := math.Max(r, math.Max(g, b))
	mn := math.Min(r, math.Min(g, b))
	v = mx
	d := mx - mn
	if mx > 0 {
		s = d / mx
	}
	if d == 0 {
		return 0, s, v
	}
	switch mx {
	case r:
		h = 60 * math.Mod((g-b)/d, 6)
	case g:
		h = 60 * ((b-r)/d + 2)
	default:
		h = 60 * ((r-g)/d + 4)
	}
	if h < 0 {
		h += 360
	}
	return h, s, v
}

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func round(f Features) Features {
	r := func(x float64) float64 { return math.Round(x*1000) / 1000 }
	f.Brightness = r(f.Brightness)
	f.TopBrightness = r(f.TopBrightness)
	f.BottomBrightness = r(f.BottomBrightness)
	f.Saturation = r(f.Saturation)
	f.Colourfulness = r(f.Colourfulness)
	f.Chromatic = r(f.Chromatic)
	f.Warm = r(f.Warm)
	f.Green = r(f.Green)
	f.Blue = r(f.Blue)
	f.Dark = r(f.Dark)
	f.Snowy = r(f.Snowy)
	return f
}
