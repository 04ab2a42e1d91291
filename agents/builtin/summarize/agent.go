package summarize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/docsearch"
	"github.com/agentmesh/agentmesh/agents/builtin/llmiface"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// Name is the agent's name on the mesh.
const Name = "SummarizeAgent"

// Methods named in the summary.
const (
	MethodLLM        = "llm"
	MethodExtractive = "extractive"
)

// DefaultSentences is how many sentences per document the extractive
// summary keeps when the task does not say.
const DefaultSentences = 3

// MaxPromptText bounds the document text sent to the LLM, in bytes; longer
// text is cut, each document getting an equal share.
const MaxPromptText = 48 << 10

// SystemPrompt is what the LLM is told before the documents.
const SystemPrompt = "You summarise documents. Write a concise summary in plain prose of what the documents say, " +
	"one short paragraph per document headed by its name. Do not invent facts."

// Option configures the agent.
type Option func(*Agent)

// WithTextModel makes the agent summarise with m. A nil m keeps the
// extractive method.
func WithTextModel(m llmiface.TextModel) Option {
	return func(a *Agent) { a.model = m }
}

// Agent is the SummarizeAgent.
type Agent struct {
	files resolvers.FileResolver
	model llmiface.TextModel
}

var _ agents.Agent = (*Agent)(nil)

// New returns a SummarizeAgent reading documents through files. Options:
// WithTextModel.
func New(files resolvers.FileResolver, opts ...Option) (*Agent, error) {
	if files == nil {
		return nil, errors.New("summarize: New needs a file resolver (the object store resolver)")
	}
	a := &Agent{files: files}
	for _, o := range opts {
		o(a)
	}
	return a, nil
}

// Contract declares GENERATION: documents in, one TEXT summary out.
func (a *Agent) Contract() schemas.AgentContract {
	return schemas.AgentContract{
		Name:       Name,
		Version:    "1.0.0",
		Capability: schemas.CapGeneration,
		Description: "Summarises documents (plain text, Markdown, HTML, PDF): with the configured LLM, " +
			"or by extracting each document's most representative sentences when none is configured.",
		Inputs: []schemas.TypedInput{{
			Name: "documents", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentDocuments, Required: true,
			Description: "the documents to summarise",
		}},
		Outputs: []schemas.TypedOutput{{
			Name: "summary", DataType: schemas.TypeText, Description: "the summary",
		}},
		Params: json.RawMessage(`{"type":"object","properties":{` +
			`"sentences":{"type":"integer","minimum":1,"maximum":50,"description":"sentences per document in an extractive summary (default 3)"}}}`),
		TimeoutMS: 180_000,
	}
}

type document struct {
	id, name, text string
}

// Execute extracts every document's text and summarises them. Documents
// that cannot be read are skipped and named; the task fails when none can.
func (a *Agent) Execute(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
	fc, err := ec.Files("documents")
	if err != nil {
		return schemas.Failure(Name, schemas.CodeInvalidInput, fmt.Sprintf("input \"documents\" (FILE_IDS of documents) is required: %v", err), false), nil
	}
	if fc.Spilled() {
		return schemas.Failure(Name, schemas.CodeInvalidInput, fmt.Sprintf("input \"documents\" is a spilled collection (%s); the runtime resolves those before Execute", fc.Ref()), false), nil
	}
	sentences := DefaultSentences
	if v, ok := ec.Params()["sentences"]; ok {
		n, err := docsearch.LimitParam(map[string]any{"limit": v}, DefaultSentences)
		if err != nil {
			return schemas.Failure(Name, schemas.CodeInvalidParams, strings.Replace(err.Error(), "limit", "sentences", 1), false), nil
		}
		sentences = n
	}

	ids := fc.IDs()
	var (
		docs    []document
		skipped []string
	)
	i := 0
	for f, err := range a.files.ResolveBatch(ctx, ids) {
		id := ids[i]
		i++
		if err != nil {
			if ctx.Err() != nil {
				return schemas.AgentResult{}, ctx.Err()
			}
			skipped = append(skipped, fmt.Sprintf("%s: %v", id, err))
			continue
		}
		name := docsearch.DisplayName(f.Ref)
		kind := docsearch.DocumentType(f.Ref.MediaType, f.Ref.Filename)
		if kind == "" {
			skipped = append(skipped, fmt.Sprintf("%s (%s) is %s, not a document", id, name, orUnknown(f.Ref.MediaType)))
			continue
		}
		text, err := docsearch.ExtractText(f.Content, kind)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s (%s): %v", id, name, err))
			continue
		}
		if text == "" {
			skipped = append(skipped, fmt.Sprintf("%s (%s) has no text", id, name))
			continue
		}
		docs = append(docs, document{id: id, name: name, text: text})
	}
	if len(docs) == 0 {
		msg := "there are no documents to summarise"
		if len(skipped) > 0 {
			msg = fmt.Sprintf("none of the %d documents could be read: %s", len(skipped), strings.Join(skipped, "; "))
		}
		return schemas.Failure(Name, schemas.CodeInvalidInput, msg, false), nil
	}

	var (
		text   string
		method = MethodExtractive
		tokens schemas.Tokens
	)
	if a.model != nil {
		out, tok, err := a.model.Complete(ctx, SystemPrompt, userPrompt(docs))
		if err != nil {
			if ctx.Err() != nil {
				return schemas.AgentResult{}, ctx.Err()
			}
			return schemas.AgentResult{}, agents.Retryable(fmt.Errorf("the LLM could not summarise: %w", err))
		}
		text, method, tokens = strings.TrimSpace(out), MethodLLM, tok
	} else {
		var b strings.Builder
		for k, d := range docs {
			if k > 0 {
				b.WriteString("\n\n")
			}
			if len(docs) > 1 {
				fmt.Fprintf(&b, "%s: ", d.name)
			}
			b.WriteString(strings.Join(Extractive(d.text, sentences), " "))
		}
		text = b.String()
	}

	summary := fmt.Sprintf("summarised %d documents (method: %s)", len(docs), method)
	if len(skipped) > 0 {
		summary += fmt.Sprintf("; skipped %d: %s", len(skipped), strings.Join(skipped, "; "))
	}
	return schemas.AgentResult{
		Success:    true,
		Agent:      Name,
		Capability: schemas.CapGeneration,
		Summary:    summary,
		Outputs:    map[string]schemas.TypedValue{"summary": schemas.TextValue(text, Name)},
		Metrics:    schemas.Metrics{Tokens: tokens},
	}, nil
}

// userPrompt lists the documents, each cut to its share of MaxPromptText.
func userPrompt(docs []document) string {
	share := MaxPromptText / len(docs)
	var b strings.Builder
	fmt.Fprintf(&b, "Summarise these %d documents.\n", len(docs))
	for _, d := range docs {
		text := d.text
		if len(text) > share {
			cut := share
			for cut > 0 && !utf8.RuneStart(text[cut]) {
				cut--
			}
			text = text[:cut] + "\n[…cut]"
		}
		fmt.Fprintf(&b, "\n## Document: %s\n%s\n", d.name, text)
	}
	return b.String()
}

func orUnknown(mediaType string) string {
	if mediaType == "" {
		return "of unknown type"
	}
	return mediaType
}
