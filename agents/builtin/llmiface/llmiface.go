package llmiface

import (
	"context"

	"github.com/agentmesh/agentmesh/schemas"
)

// TextModel completes a conversation of one system and one user message,
// and says what the call used: tokens, their cost (price them with package
// llm/pricing, the table the LLM client uses) and the time waited for the
// model. Implementations must be safe for concurrent use.
type TextModel interface {
	Complete(ctx context.Context, system, user string) (text string, usage schemas.Usage, err error)
}

// VisionModel describes one image: a few short labels (the first is taken as
// its category) and a one-sentence caption. mediaType is the image's MIME
// type, such as "image/jpeg"; usage is what the call used, as for
// TextModel. Implementations must be safe for concurrent use.
type VisionModel interface {
	Describe(ctx context.Context, image []byte, mediaType string) (labels []string, caption string, usage schemas.Usage, err error)
}

// TextModelFunc adapts a function to a TextModel.
type TextModelFunc func(ctx context.Context, system, user string) (string, schemas.Usage, error)

// Complete calls f.
func (f TextModelFunc) Complete(ctx context.Context, system, user string) (string, schemas.Usage, error) {
	return f(ctx, system, user)
}

// VisionModelFunc adapts a function to a VisionModel.
type VisionModelFunc func(ctx context.Context, image []byte, mediaType string) ([]string, string, schemas.Usage, error)

// Describe calls f.
func (f VisionModelFunc) Describe(ctx context.Context, image []byte, mediaType string) ([]string, string, schemas.Usage, error) {
	return f(ctx, image, mediaType)
}
