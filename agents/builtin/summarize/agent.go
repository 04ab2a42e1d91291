package summarize

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/internal/fileagent"
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
type Option = fileagent.Option[Agent]

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
	return fileagent.New("summarize", files, &Agent{files: files}, opts...)
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
	t := fileagent.Start(a.Contract())
	ids, err := t.Files(ec, "documents")
	if err != nil {
		return t.Abort(err)
	}
	sentences, err := t.IntParam(ec, "sentences", DefaultSentences)
	if err != nil {
		return t.Abort(err)
	}
	var docs []document
	err = t.EachFile(ctx, a.files, ids, func(_ int, id string, f resolvers.File) {
		name := fileagent.DisplayName(f.Ref)
		kind := fileagent.DocumentType(f.Ref.MediaType, f.Ref.Filename)
		if kind == "" {
			t.Skip("%s (%s) is %s, not a document", id, name, fileagent.MediaTypeOf(f.Ref))
			return
		}
		text, err := fileagent.ExtractText(f.Content, kind)
		switch {
		case err != nil:
			t.Skip("%s (%s): %v", id, name, err)
		case text == "":
			t.Skip("%s (%s) has no text", id, name)
		default:
			docs = append(docs, document{id: id, name: name, text: text})
		}
	})
	if err != nil {
		return t.Abort(err)
	}
	if len(docs) == 0 {
		if n, _ := t.Skipped(); n == 0 {
			return t.Fail(schemas.CodeInvalidInput, "there are no documents to summarise")
		}
		return t.FailAll(schemas.CodeInvalidInput, "documents could be read")
	}

	var (
		text   string
		method = MethodExtractive
		usage  schemas.Usage
	)
	if a.model != nil {
		out, used, err := a.model.Complete(ctx, SystemPrompt, userPrompt(docs))
		if err != nil {
			if ctx.Err() != nil {
				return schemas.AgentResult{}, ctx.Err()
			}
			return schemas.AgentResult{}, agents.Retryable(fmt.Errorf("the LLM could not summarise: %w", err))
		}
		text, method, usage = strings.TrimSpace(out), MethodLLM, used
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

	return t.Done(fmt.Sprintf("summarised %s (method: %s)", schemas.Plural(len(docs), "document", "documents"), method),
		map[string]schemas.TypedValue{"summary": schemas.TextValue(text, Name)}, usage)
}

// userPrompt lists the documents, each cut to its share of MaxPromptText.
func userPrompt(docs []document) string {
	share := MaxPromptText / len(docs)
	var b strings.Builder
	fmt.Fprintf(&b, "Summarise these %d documents.\n", len(docs))
	for _, d := range docs {
		text := d.text
		if len(text) > share {
			text = fileagent.Cut(text, share) + "\n[…cut]"
		}
		fmt.Fprintf(&b, "\n## Document: %s\n%s\n", d.name, text)
	}
	return b.String()
}
