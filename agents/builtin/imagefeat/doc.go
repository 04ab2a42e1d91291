// Package imagefeat decodes images (JPEG, PNG, GIF, WebP) and computes the
// pixel features the built-in agents share: dominant hue, brightness,
// colourfulness, warmth, the share of green, blue, dark and snowy pixels,
// orientation and size. From those it names a category (sunset, forest,
// seascape, night, snow, other) and the visual words image search matches.
package imagefeat
