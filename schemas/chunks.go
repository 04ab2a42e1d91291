package schemas

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
)

// TypeChunks is the data type of passages retrieved from stored documents
// (Chunks), as KnowledgeAgent returns them.
const TypeChunks = "CHUNKS"

// Chunk is one passage of a stored document: its text, the file it comes
// from, its position among that file's chunks and its retrieval score.
type Chunk struct {
	Text     string  `json:"text"`
	FileID   string  `json:"file_id"`
	Position int     `json:"position"`
	Score    float64 `json:"score"`
	Filename string  `json:"filename,omitempty"`
	Heading  string  `json:"heading,omitempty"`
}

// Chunks are passages, best match first.
type Chunks []Chunk

// chunkFacts bounds what a model reads of a CHUNKS value beside its count:
// the first chunkFactsMax passages, each clipped to chunkFactsClip
// characters.
const (
	chunkFactsMax  = 8
	chunkFactsClip = 700
)

// chunksType is the CHUNKS descriptor: values go to current_chunks, two
// values merge into one list best first (a passage found twice kept once,
// with its higher score), and a model reads the passages' text, so that a
// chat turn can answer from them.
func chunksType() DataType {
	return DataType{
		Name:        TypeChunks,
		Description: "Passages of stored documents (text, source file id, position, score), best match first.",
		Merge:       mergeChunks,
		Slots:       map[string]string{"": "current_chunks"},
		Unit:        [2]string{"chunk", "chunks"},
		Facts:       chunkFacts,
	}
}

func mergeChunks(a, b json.RawMessage) (json.RawMessage, error) {
	var ca, cb Chunks
	if err := json.Unmarshal(a, &ca); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &cb); err != nil {
		return nil, err
	}
	return json.Marshal(MergeChunks(ca, cb))
}

// MergeChunks is a and b in one list, highest score first (ties keep a's
// order, then b's); a passage in both (same file and position) is kept
// once, with its higher score.
func MergeChunks(a, b Chunks) Chunks {
	type key struct {
		file string
		pos  int
	}
	out := make(Chunks, 0, len(a)+len(b))
	at := map[key]int{}
	for _, c := range slices.Concat(a, b) {
		k := key{c.FileID, c.Position}
		if i, seen := at[k]; seen {
			out[i].Score = max(out[i].Score, c.Score)
			continue
		}
		at[k] = len(out)
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(x, y Chunk) int { return cmp.Compare(y.Score, x.Score) })
	return out
}

func chunkFacts(v TypedValue) map[string]any {
	var cs Chunks
	if v.Decode(&cs) != nil {
		return nil
	}
	passages := make([]map[string]any, 0, min(len(cs), chunkFactsMax))
	for _, c := range cs[:min(len(cs), chunkFactsMax)] {
		source := c.Filename
		if source == "" {
			source = c.FileID
		}
		p := map[string]any{"source": fmt.Sprintf("%s #%d", source, c.Position), "text": Clip(c.Text, chunkFactsClip)}
		if c.Heading != "" {
			p["heading"] = c.Heading
		}
		passages = append(passages, p)
	}
	return map[string]any{"passages": passages}
}
