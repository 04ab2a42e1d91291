package samples

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
)

// Image scenes drawn by Images.
const (
	SceneSunset   = "sunset"
	SceneForest   = "forest"
	SceneSeascape = "seascape"
	SceneNight    = "night"
	SceneSnow     = "snow"
)

type imageSpec struct {
	name  string
	scene string
	tags  []string
	w, h  int
	seed  uint64
}

// imageSpecs is the sample set: descriptive names with tags, and camera-style
// names without, so that only the pixels tell what they show.
var imageSpecs = []imageSpec{
	{"sunset_beach.jpg", SceneSunset, []string{"sunset", "beach", "holiday"}, 320, 240, 1},
	{"golden_hour_sunset.png", SceneSunset, []string{"sunset", "golden hour"}, 320, 200, 2},
	{"IMG_0042.jpg", SceneSunset, nil, 320, 240, 3},
	{"IMG_0107.jpg", SceneSunset, nil, 240, 320, 4},
	{"DSC_1893.jpg", SceneSunset, nil, 320, 240, 5},
	{"forest_trail.jpg", SceneForest, []string{"forest", "hiking"}, 320, 240, 6},
	{"pine_woods.png", SceneForest, []string{"forest", "trees"}, 240, 320, 7},
	{"IMG_0051.jpg", SceneForest, nil, 320, 240, 8},
	{"IMG_0233.jpg", SceneForest, nil, 320, 240, 9},
	{"ocean_waves.jpg", SceneSeascape, []string{"sea", "ocean", "waves"}, 320, 240, 10},
	{"IMG_0077.jpg", SceneSeascape, nil, 320, 240, 11},
	{"DSC_2051.jpg", SceneSeascape, nil, 320, 200, 12},
	{"city_at_night.jpg", SceneNight, []string{"city", "night"}, 320, 240, 13},
	{"IMG_0310.jpg", SceneNight, nil, 320, 240, 14},
	{"IMG_0388.png", SceneNight, nil, 240, 320, 15},
	{"snowy_field.jpg", SceneSnow, []string{"snow", "winter"}, 320, 240, 16},
	{"IMG_0412.jpg", SceneSnow, nil, 320, 240, 17},
}

// Images returns the generated sample images: 5 sunsets, 4 forests,
// 3 seascapes, 3 night cities and 2 snow scenes, as JPEG and PNG, some with
// descriptive names and tags and some with camera-style names such as
// IMG_0042.jpg. The bytes are the same on every call; they are drawn once
// per process and each call returns its own copy.
func Images() []Sample {
	imagesOnce.Do(func() { imagesCache = drawImages() })
	out := make([]Sample, len(imagesCache))
	for i, s := range imagesCache {
		s.Content = bytes.Clone(s.Content)
		s.Tags = slices.Clone(s.Tags)
		out[i] = s
	}
	return out
}

var (
	imagesOnce  sync.Once
	imagesCache []Sample
)

func drawImages() []Sample {
	out := make([]Sample, 0, len(imageSpecs))
	for _, sp := range imageSpecs {
		img := Draw(sp.scene, sp.w, sp.h, sp.seed)
		var buf bytes.Buffer
		mediaType := "image/png"
		if strings.HasSuffix(sp.name, ".jpg") {
			mediaType = "image/jpeg"
			if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 85}); err != nil {
				panic(fmt.Sprintf("samples: encode %s: %v", sp.name, err)) // cannot fail on an in-memory RGBA
			}
		} else if err := png.Encode(&buf, img); err != nil {
			panic(fmt.Sprintf("samples: encode %s: %v", sp.name, err))
		}
		out = append(out, Sample{Name: sp.name, MediaType: mediaType, Content: buf.Bytes(), Tags: sp.tags, Scene: sp.scene})
	}
	return out
}

// Draw paints one scene of w×h pixels from seed. Unknown scenes panic.
func Draw(scene string, w, h int, seed uint64) *image.RGBA {
	c := &canvas{img: image.NewRGBA(image.Rect(0, 0, w, h)), w: w, h: h, rng: rand.New(rand.NewPCG(seed, 0x5eed))}
	switch scene {
	case SceneSunset:
		c.sunset()
	case SceneForest:
		c.forest()
	case SceneSeascape:
		c.seascape()
	case SceneNight:
		c.night()
	case SceneSnow:
		c.snow()
	default:
		panic("samples: unknown scene " + scene)
	}
	c.grain(6)
	return c.img
}

type rgbf struct{ r, g, b float64 }

func lerp(a, b rgbf, t float64) rgbf {
	t = math.Max(0, math.Min(1, t))
	return rgbf{a.r + (b.r-a.r)*t, a.g + (b.g-a.g)*t, a.b + (b.b-a.b)*t}
}

// gradient picks a colour along stops spread evenly over [0,1].
func gradient(t float64, stops ...rgbf) rgbf {
	if t <= 0 {
		return stops[0]
	}
	if t >= 1 {
		return stops[len(stops)-1]
	}
	seg := t * float64(len(stops)-1)
	i := int(seg)
	return lerp(stops[i], stops[i+1], seg-float64(i))
}

type canvas struct {
	img  *image.RGBA
	w, h int
	rng  *rand.Rand
}

func (c *canvas) set(x, y int, col rgbf) {
	if x < 0 || y < 0 || x >= c.w || y >= c.h {
		return
	}
	cl := func(v float64) uint8 { return uint8(math.Max(0, math.Min(255, math.Round(v)))) }
	c.img.SetRGBA(x, y, color.RGBA{cl(col.r), cl(col.g), cl(col.b), 255})
}

func (c *canvas) get(x, y int) rgbf {
	p := c.img.RGBAAt(x, y)
	return rgbf{float64(p.R), float64(p.G), float64(p.B)}
}

// grain adds sensor-like noise of the given amplitude to every pixel.
func (c *canvas) grain(amp float64) {
	for y := range c.h {
		for x := range c.w {
			p := c.get(x, y)
			n := (c.rng.Float64()*2 - 1) * amp
			c.set(x, y, rgbf{p.r + n + (c.rng.Float64()*2-1)*amp/2, p.g + n, p.b + n + (c.rng.Float64()*2-1)*amp/2})
		}
	}
}

// ridge is a wavy horizon height at x: a sum of sines with random phases.
func (c *canvas) ridge(base, amp float64) func(x int) float64 {
	p1, p2, p3 := c.rng.Float64()*6.3, c.rng.Float64()*6.3, c.rng.Float64()*6.3
	f1 := 1.5 + c.rng.Float64()*2
	return func(x int) float64 {
		t := float64(x) / float64(c.w)
		return base + amp*(0.6*math.Sin(t*f1*math.Pi+p1)+0.3*math.Sin(t*7.1+p2)+0.1*math.Sin(t*23+p3))
	}
}

func (c *canvas) sunset() {
	horizon := float64(c.h) * (0.62 + c.rng.Float64()*0.08)
	sunX := float64(c.w) * (0.3 + c.rng.Float64()*0.4)
	sunY := horizon - float64(c.h)*(0.04+c.rng.Float64()*0.08)
	sunR := float64(min(c.w, c.h)) * (0.07 + c.rng.Float64()*0.04)
	top := rgbf{70 + c.rng.Float64()*30, 35, 95 + c.rng.Float64()*30}
	sky := []rgbf{top, {190, 70, 90}, {245, 125, 45}, {255, 185, 80}}
	hill := c.ridge(horizon+float64(c.h)*0.06, float64(c.h)*0.05)
	for y := range c.h {
		for x := range c.w {
			fy, fx := float64(y), float64(x)
			var col rgbf
			if fy < horizon {
				col = gradient(fy/horizon, sky...)
				// the glow around the sun
				d := math.Hypot(fx-sunX, fy-sunY)
				glow := math.Exp(-d / (sunR * 3))
				col = lerp(col, rgbf{255, 220, 140}, glow*0.8)
				if d < sunR {
					col = lerp(rgbf{255, 240, 190}, col, d/sunR*0.3)
				}
				// thin cloud streaks
				if s := math.Sin(fy*0.35+math.Sin(fx*0.02)*3) * math.Sin(fx*0.01+fy*0.05); s > 0.85 {
					col = lerp(col, rgbf{255, 150, 120}, 0.35)
				}
			} else {
				// water reflecting the sky, darker with depth
				depth := (fy - horizon) / (float64(c.h) - horizon)
				col = lerp(rgbf{230, 110, 50}, rgbf{60, 25, 40}, depth)
				if math.Abs(fx-sunX) < sunR*(1-depth*0.5) && math.Sin(fy*0.9) > 0 {
					col = lerp(col, rgbf{255, 210, 130}, 0.6)
				}
			}
			if fy > hill(x) {
				// silhouetted land in front
				col = lerp(rgbf{25, 12, 18}, rgbf{10, 5, 8}, (fy-hill(x))/float64(c.h))
			}
			c.set(x, y, col)
		}
	}
	// a few palm or tree silhouettes on the land
	for range 1 + c.rng.IntN(3) {
		tx := c.rng.IntN(c.w)
		th := int(float64(c.h) * (0.15 + c.rng.Float64()*0.15))
		base := int(hill(tx))
		for y := base - th; y < base; y++ {
			for x := tx - 2; x <= tx+2; x++ {
				c.set(x, y, rgbf{15, 8, 12})
			}
		}
		for a := 0.0; a < 2*math.Pi; a += 0.05 {
			for r := 0.0; r < float64(th)/3; r++ {
				c.set(tx+int(r*math.Cos(a)), base-th+int(r*math.Sin(a)*0.6), rgbf{15, 8, 12})
			}
		}
	}
}

func (c *canvas) forest() {
	skyLine := float64(c.h) * (0.08 + c.rng.Float64()*0.12)
	for y := range c.h {
		for x := range c.w {
			fy, fx := float64(y), float64(x)
			var col rgbf
			if fy < skyLine {
				col = gradient(fy/skyLine, rgbf{200, 220, 235}, rgbf{170, 200, 190})
			} else {
				// layered foliage: blotchy greens
				n := math.Sin(fx*0.09+math.Sin(fy*0.07)*2) + math.Sin(fy*0.11+fx*0.03) + 0.6*math.Sin((fx+fy)*0.23)
				t := (n + 2.6) / 5.2
				col = gradient(t, rgbf{20, 60, 25}, rgbf{45, 110, 40}, rgbf{90, 150, 55}, rgbf{140, 180, 70})
				if fy > float64(c.h)*0.85 {
					col = lerp(col, rgbf{80, 70, 35}, (fy/float64(c.h)-0.85)*3)
				}
			}
			c.set(x, y, col)
		}
	}
	// tree trunks with bark texture
	for range 5 + c.rng.IntN(5) {
		tx := c.rng.IntN(c.w)
		tw := 3 + c.rng.IntN(8)
		top := int(skyLine) + c.rng.IntN(c.h/3)
		for y := top; y < c.h; y++ {
			for x := tx; x < tx+tw; x++ {
				bark := 0.75 + 0.25*math.Sin(float64(y)*0.8+float64(x)*2.1)
				c.set(x, y, rgbf{85 * bark, 60 * bark, 35 * bark})
			}
		}
	}
	// dappled light
	for range 40 {
		cx, cy, r := c.rng.IntN(c.w), c.rng.IntN(c.h), 2+c.rng.IntN(6)
		for y := cy - r; y <= cy+r; y++ {
			for x := cx - r; x <= cx+r; x++ {
				if x >= 0 && y >= 0 && x < c.w && y < c.h && (x-cx)*(x-cx)+(y-cy)*(y-cy) <= r*r {
					c.set(x, y, lerp(c.get(x, y), rgbf{170, 210, 90}, 0.4))
				}
			}
		}
	}
}

func (c *canvas) seascape() {
	horizon := float64(c.h) * (0.35 + c.rng.Float64()*0.1)
	beach := float64(c.h) * (0.9 + c.rng.Float64()*0.05)
	for y := range c.h {
		for x := range c.w {
			fy, fx := float64(y), float64(x)
			var col rgbf
			switch {
			case fy < horizon:
				col = gradient(fy/horizon, rgbf{60, 120, 200}, rgbf{140, 190, 235})
				if c := math.Sin(fx*0.03+fy*0.1) * math.Sin(fy*0.2); c > 0.8 {
					col = lerp(col, rgbf{235, 240, 250}, 0.5) // wisps of cloud
				}
			case fy < beach:
				depth := (fy - horizon) / (beach - horizon)
				col = gradient(depth, rgbf{20, 70, 140}, rgbf{30, 100, 170}, rgbf{40, 140, 180})
				// wave bands
				w := math.Sin(fy*(0.5+depth*0.3) + math.Sin(fx*0.05+fy*0.02)*2.5)
				if w > 0.75 {
					col = lerp(col, rgbf{200, 225, 240}, (w-0.75)*2.4)
				}
			default:
				col = rgbf{215, 200, 160} // a strip of sand
			}
			c.set(x, y, col)
		}
	}
}

func (c *canvas) night() {
	for y := range c.h {
		for x := range c.w {
			c.set(x, y, gradient(float64(y)/float64(c.h), rgbf{8, 10, 30}, rgbf{20, 25, 55}, rgbf{35, 35, 60}))
		}
	}
	// stars
	for range 60 {
		c.set(c.rng.IntN(c.w), c.rng.IntN(c.h/2), rgbf{230, 230, 255})
	}
	// buildings with lit windows
	for x := 0; x < c.w; {
		bw := 18 + c.rng.IntN(30)
		bh := int(float64(c.h) * (0.25 + c.rng.Float64()*0.5))
		shade := 10 + c.rng.Float64()*12
		for y := c.h - bh; y < c.h; y++ {
			for xx := x; xx < x+bw; xx++ {
				c.set(xx, y, rgbf{shade, shade, shade + 8})
			}
		}
		for wy := c.h - bh + 4; wy < c.h-4; wy += 7 {
			for wx := x + 3; wx < x+bw-4; wx += 6 {
				if c.rng.Float64() < 0.35 {
					lit := gradient(c.rng.Float64(), rgbf{255, 200, 110}, rgbf{255, 235, 170}, rgbf{190, 220, 255})
					for y := wy; y < wy+3; y++ {
						for xx := wx; xx < wx+3; xx++ {
							c.set(xx, y, lit)
						}
					}
				}
			}
		}
		x += bw + c.rng.IntN(4)
	}
}

func (c *canvas) snow() {
	horizon := float64(c.h) * (0.3 + c.rng.Float64()*0.1)
	ground := c.ridge(horizon, float64(c.h)*0.04)
	for y := range c.h {
		for x := range c.w {
			fy, fx := float64(y), float64(x)
			var col rgbf
			if fy < ground(x) {
				col = gradient(fy/horizon, rgbf{175, 195, 220}, rgbf{215, 225, 238})
			} else {
				// drifts: soft blue-grey shading on white
				s := 0.5 + 0.5*math.Sin(fx*0.04+math.Sin(fy*0.05)*2)*math.Sin(fy*0.03)
				col = lerp(rgbf{250, 251, 255}, rgbf{205, 215, 232}, s*0.6)
			}
			c.set(x, y, col)
		}
	}
	// a few dark conifers on the horizon
	for range 3 + c.rng.IntN(4) {
		tx := c.rng.IntN(c.w)
		th := 10 + c.rng.IntN(25)
		base := int(ground(tx)) + 2
		for y := base - th; y < base; y++ {
			half := (y - (base - th)) / 3
			for x := tx - half; x <= tx+half; x++ {
				c.set(x, y, rgbf{30, 45, 35})
			}
		}
	}
}
