// Package imagesearch is the ImageSearchAgent: it finds stored images whose
// filename, tags, folder or other metadata match a query, and also those
// whose pixels do, through visual words (sunset, forest, warm, dark...)
// computed from each image the first time it is seen and cached in its
// metadata. Results are ranked by score.
package imagesearch
