package llmtest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"unicode"

	openai "github.com/sashabaranov/go-openai"
)

// EmbeddingDims is the size of the vectors Embedding makes.
const EmbeddingDims = 256

// Embedding is the vector the scripted server answers for text on
// /v1/embeddings: the same text always gives the same vector, of length 1.
// Each word of three letters or more adds its first five letters (so that
// "refund", "refunds" and "refundable" meet) and, with less weight, its
// letter trigrams (so that parts of words meet), hashed into EmbeddingDims
// buckets: a crude model of meaning, different from exact-word matching,
// that tests of dense retrieval can rely on.
func Embedding(text string) []float32 {
	v := make([]float64, EmbeddingDims)
	add := func(feature string, w float64) {
		h := fnv.New32a()
		_, _ = h.Write([]byte(feature))
		sum := h.Sum32()
		sign := 1.0
		if sum&1 == 1 {
			sign = -1
		}
		v[(sum>>1)%EmbeddingDims] += sign * w
	}
	for _, word := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		r := []rune(word)
		if len(r) < 3 {
			continue
		}
		add("w:"+string(r[:min(len(r), 5)]), 1)
		for i := 0; i+3 <= len(r); i++ {
			add("t:"+string(r[i:i+3]), 0.3)
		}
	}
	var norm float64
	for _, x := range v {
		norm += x * x
	}
	out := make([]float32, EmbeddingDims)
	if norm == 0 {
		out[0] = 1 // no features: a fixed unit vector
		return out
	}
	norm = math.Sqrt(norm)
	for i, x := range v {
		out[i] = float32(x / norm)
	}
	return out
}

// embedCounter counts the texts the server embedded.
type embedCounter struct{ texts atomic.Int64 }

// EmbeddedTexts is how many texts the server has embedded so far.
func (s *Server) EmbeddedTexts() int64 { return s.embedded.texts.Load() }

// embed answers an OpenAI embeddings request with Embedding of each input.
func (s *Server) embed(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		s.fail(w, "reading body: "+err.Error(), writeError)
		return
	}
	var req struct {
		Input any    `json:"input"`
		Model string `json:"model"`
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		s.fail(w, "request body is not an embeddings request: "+err.Error(), writeError)
		return
	}
	var texts []string
	switch in := req.Input.(type) {
	case string:
		texts = []string{in}
	case []any:
		for _, x := range in {
			t, ok := x.(string)
			if !ok {
				s.fail(w, "embeddings input holds a non-string", writeError)
				return
			}
			texts = append(texts, t)
		}
	default:
		s.fail(w, "embeddings input is neither a string nor a list of strings", writeError)
		return
	}
	s.embedded.texts.Add(int64(len(texts)))
	resp := openai.EmbeddingResponse{Object: "list", Model: openai.EmbeddingModel(req.Model)}
	tokens := 0
	for i, t := range texts {
		resp.Data = append(resp.Data, openai.Embedding{Object: "embedding", Index: i, Embedding: Embedding(t)})
		tokens += len(strings.Fields(t))
	}
	resp.Usage = openai.Usage{PromptTokens: tokens, TotalTokens: tokens}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// EmbeddedTexts is how many texts the server has embedded so far.
func (s *GeminiServer) EmbeddedTexts() int64 { return s.embedded.texts.Load() }

// embed answers a Gemini batchEmbedContents request with Embedding of
// each request's text.
func (s *GeminiServer) embed(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Goog-Api-Key") == "" {
		s.fail(w, "request without x-goog-api-key", writeGeminiError)
		return
	}
	var req struct {
		Requests []struct {
			Model   string `json:"model"`
			Content struct {
				Parts []struct {
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"content"`
		} `json:"requests"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Requests) == 0 {
		s.fail(w, fmt.Sprintf("request body is not a batchEmbedContents request: %v", err), writeGeminiError)
		return
	}
	type values struct {
		Values []float32 `json:"values"`
	}
	var out struct {
		Embeddings []values `json:"embeddings"`
	}
	for _, q := range req.Requests {
		var text strings.Builder
		for _, p := range q.Content.Parts {
			text.WriteString(p.Text)
		}
		out.Embeddings = append(out.Embeddings, values{Values: Embedding(text.String())})
	}
	s.embedded.texts.Add(int64(len(req.Requests)))
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
