package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmesh/agentmesh/agents/builtin/knowledge"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

func init() { register(newKBCmd) }

func newKBCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kb",
		Short: "Create, fill, list, search and remove knowledge bases",
		Long: `A knowledge base is a named set of stored documents (text, Markdown, HTML, PDF)
that KnowledgeAgent searches for the passages answering a question: from a chat,
a pipeline step, a PromptAgent tool or an MCP client. Bases and their indexes live
in the mesh's object store, so every KnowledgeAgent serves every base
(docs/knowledge.md).`,
		Example: `  agentmesh kb create policies
  agentmesh kb add policies docs/refund-policy.md handbook/
  agentmesh kb search policies "how long do I have to return an item?"`,
	}
	cmd.AddCommand(newKBCreateCmd(a), newKBAddCmd(a), newKBLsCmd(a), newKBSearchCmd(a), newKBRmCmd(a))
	return cmd
}

// kbStores connects and returns the knowledge store and the file store.
func (a *app) kbStores(ctx context.Context) (*knowledge.Store, *resolvers.ObjectStore, *mesh, error) {
	m, err := a.connect(ctx, "agentmesh kb")
	if err != nil {
		return nil, nil, nil, err
	}
	if m.ID.Role == bus.RoleClient {
		m.Close()
		return nil, nil, nil, fmt.Errorf("knowledge bases live in the shared files bucket %s, which the credentials of %s may not read or write on a secure mesh (docs/security.md, \"Files\"): run agentmesh kb with admin credentials", m.Names.FilesStore(), m.ID.User())
	}
	return knowledge.NewStore(m.Res.Files), resolvers.NewObjectStore(m.Res.Files), m, nil
}

// kbName checks a NAME argument, a usage error when it cannot be a name.
func kbName(name string) error {
	if err := knowledge.CheckName(name); err != nil {
		return usageError{err}
	}
	return nil
}

func newKBCreateCmd(a *app) *cobra.Command {
	var description string
	cmd := &cobra.Command{
		Use:     "create NAME",
		Short:   "Create an empty knowledge base",
		Example: `  agentmesh kb create policies --description "shop policies"`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := kbName(args[0]); err != nil {
				return err
			}
			kb, _, m, err := a.kbStores(cmd.Context())
			if err != nil {
				return err
			}
			defer m.Close()
			b, err := kb.Create(cmd.Context(), args[0], description)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(b)
			}
			fmt.Fprintf(a.out, "created knowledge base %s; add documents with 'agentmesh kb add %s PATH|ID...'\n", b.Name, b.Name)
			return nil
		},
	}
	cmd.Flags().StringVar(&description, "description", "", "what the knowledge base holds")
	return cmd
}

func newKBAddCmd(a *app) *cobra.Command {
	var tags []string
	cmd := &cobra.Command{
		Use:   "add NAME PATH|ID...",
		Short: "Add documents to a knowledge base: files to store (globs, directories) or stored file ids",
		Long: `Add documents to a knowledge base. An argument that names a file, a directory or a
glob on this machine is stored first (as 'agentmesh files put' does); any other is
the id of a stored document. Documents are plain text, Markdown, HTML or PDF.
KnowledgeAgent chunks and indexes each document on the first search that needs it.`,
		Example: `  agentmesh kb add policies refund-policy.md 'handbook/*.pdf'
  agentmesh kb add policies f-01J9Z3QK7W2V8X`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := kbName(name); err != nil {
				return err
			}
			ctx := cmd.Context()
			kb, store, m, err := a.kbStores(ctx)
			if err != nil {
				return err
			}
			defer m.Close()
			if _, err := kb.Get(ctx, name); err != nil {
				return err
			}
			meta := map[string]string{}
			if len(tags) > 0 {
				meta[resolvers.MetaTags] = strings.Join(tags, ",")
			}
			var (
				added []schemas.FileRef
				errs  []error
			)
			for _, arg := range args[1:] {
				refs, err := kbDocuments(ctx, store, arg, meta)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				added = append(added, refs...)
			}
			ids := make([]string, len(added))
			for i, r := range added {
				ids[i] = r.ID
			}
			if len(ids) > 0 {
				if _, err := kb.Add(ctx, name, ids...); err != nil {
					return err
				}
			}
			if a.jsonOut {
				if err := a.printJSON(map[string]any{"kb": name, "added": added}); err != nil {
					return err
				}
			} else {
				for _, r := range added {
					fmt.Fprintf(a.out, "%s\t%s\n", r.ID, r.Filename)
				}
				fmt.Fprintf(a.out, "added %s to %s\n", schemas.Plural(len(added), "document", "documents"), name)
			}
			if len(errs) > 0 {
				return fmt.Errorf("%d of %d arguments not added: %w", len(errs), len(args)-1, errors.Join(errs...))
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&tags, "tag", nil, "tag the files stored from paths (repeatable); search with --filter tags=TAG")
	return cmd
}

// kbDocuments stores the documents a path argument names, or checks that
// an id argument is a stored document.
func kbDocuments(ctx context.Context, store *resolvers.ObjectStore, arg string, meta map[string]string) ([]schemas.FileRef, error) {
	if _, statErr := os.Stat(arg); statErr == nil || strings.ContainsAny(arg, "*?[") {
		paths, _, err := expandPaths([]string{arg})
		if err != nil {
			return nil, err
		}
		var refs []schemas.FileRef
		var errs []error
		for _, p := range paths {
			ref, err := putFile(ctx, store, p, meta, nil)
			switch {
			case err != nil:
				errs = append(errs, err)
			case !knowledge.IsDocument(ref):
				errs = append(errs, fmt.Errorf("%s is %s, not a document (text, Markdown, HTML or PDF); stored as %s but not added", p, orDash(ref.MediaType), ref.ID))
			default:
				refs = append(refs, ref)
			}
		}
		return refs, errors.Join(errs...)
	}
	ref, err := store.ResolveMetadata(ctx, arg)
	if err != nil {
		return nil, fmt.Errorf("%q is neither a file here nor a stored file id ('agentmesh files ls' lists them): %w", arg, err)
	}
	if !knowledge.IsDocument(ref) {
		return nil, fmt.Errorf("%s (%s) is %s, not a document (text, Markdown, HTML or PDF)", ref.ID, orDash(ref.Filename), orDash(ref.MediaType))
	}
	return []schemas.FileRef{ref}, nil
}

func newKBLsCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "ls [NAME]",
		Short: "List the knowledge bases, or the documents of one",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if len(args) == 1 {
				if err := kbName(args[0]); err != nil {
					return err
				}
			}
			kb, store, m, err := a.kbStores(ctx)
			if err != nil {
				return err
			}
			defer m.Close()
			if len(args) == 1 {
				return a.kbShow(ctx, kb, store, args[0])
			}
			bases, err := kb.List(ctx)
			if err != nil {
				return err
			}
			if a.jsonOut {
				if bases == nil {
					bases = []knowledge.Base{}
				}
				return a.printJSON(bases)
			}
			if len(bases) == 0 {
				fmt.Fprintln(a.errOut, "no knowledge bases; create one with 'agentmesh kb create NAME'")
				return nil
			}
			tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tDOCUMENTS\tCREATED\tDESCRIPTION")
			for _, b := range bases {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", b.Name, len(b.Documents), b.Created.Format(time.DateTime), orDash(b.Description))
			}
			return tw.Flush()
		},
	}
}

// kbShow lists one base's documents.
func (a *app) kbShow(ctx context.Context, kb *knowledge.Store, store *resolvers.ObjectStore, name string) error {
	b, err := kb.Get(ctx, name)
	if err != nil {
		return err
	}
	type doc struct {
		schemas.FileRef
		Missing bool `json:"missing,omitempty"`
	}
	docs := make([]doc, 0, len(b.Documents))
	for _, id := range b.Documents {
		ref, err := store.ResolveMetadata(ctx, id)
		docs = append(docs, doc{FileRef: schemas.FileRef{ID: id, Filename: ref.Filename, MediaType: ref.MediaType, Size: ref.Size, SHA256: ref.SHA256}, Missing: err != nil})
	}
	if a.jsonOut {
		return a.printJSON(map[string]any{"kb": b, "documents": docs})
	}
	tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tTYPE\tSIZE")
	for _, d := range docs {
		if d.Missing {
			fmt.Fprintf(tw, "%s\t(no longer stored)\t-\t-\n", d.ID)
			continue
		}
		mt, _, _ := strings.Cut(d.MediaType, ";")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", d.ID, orDash(d.Filename), orDash(mt), humanSize(d.Size))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(docs) == 0 {
		fmt.Fprintf(a.errOut, "%s holds no documents; add some with 'agentmesh kb add %s PATH|ID...'\n", name, name)
	}
	return nil
}

func newKBSearchCmd(a *app) *cobra.Command {
	var (
		topK    int
		mode    string
		filters []string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "search NAME QUERY",
		Short: "Ask KnowledgeAgent for the passages of a knowledge base that answer QUERY",
		Long: `Send one task to KnowledgeAgent (a live instance must run: agentmesh up, or
agentmesh agent KnowledgeAgent) and print the passages it finds, best first.
NAME - searches every stored document.`,
		Example: `  agentmesh kb search policies "are gift cards refundable?" --top-k 3
  agentmesh kb search policies refund --filter tags=refunds --json`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, query := args[0], args[1]
			if name == "-" {
				name = ""
			} else if err := kbName(name); err != nil {
				return err
			}
			if strings.TrimSpace(query) == "" {
				return usagef("QUERY is empty: give the question to search for")
			}
			if topK < 1 || topK > knowledge.MaxTopK {
				return usagef("--top-k %d: give 1 to %d", topK, knowledge.MaxTopK)
			}
			switch mode {
			case "", knowledge.ModeLexical, knowledge.ModeDense, knowledge.ModeFused:
			default:
				return usagef("--mode %q: use lexical, dense or fused", mode)
			}
			if timeout <= 0 {
				return usagef("--timeout %s: give a positive duration such as 30s", timeout)
			}
			params := map[string]any{"kb": name, "top_k": topK}
			if mode != "" {
				params["mode"] = mode
			}
			if len(filters) > 0 {
				f := map[string]any{}
				for _, kv := range filters {
					k, v, ok := strings.Cut(kv, "=")
					if !ok || k == "" {
						return usagef("--filter %q: write key=value, e.g. --filter tags=policy", kv)
					}
					f[k] = v
				}
				params["filters"] = f
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout+10*time.Second)
			defer cancel()
			m, err := a.connect(ctx, "agentmesh kb")
			if err != nil {
				return err
			}
			defer m.Close()
			res, err := kbAsk(ctx, m, schemas.TaskRequest{
				Inputs:    map[string]schemas.TypedValue{"query": schemas.TextValue(query, "cli")},
				Params:    params,
				TimeoutMS: timeout.Milliseconds(),
			}, timeout)
			if err != nil {
				return err
			}
			if !res.Success {
				return exitError{code: 1, msg: fmt.Sprintf("%s failed: %v", knowledge.Name, res.Err())}
			}
			var chunks schemas.Chunks
			if err := res.Outputs["chunks"].Decode(&chunks); err != nil {
				return fmt.Errorf("%s answered passages that do not decode: %w", knowledge.Name, err)
			}
			if a.jsonOut {
				if chunks == nil {
					chunks = schemas.Chunks{}
				}
				return a.printJSON(chunks)
			}
			fmt.Fprintln(a.out, res.Summary)
			for i, c := range chunks {
				where := orDash(c.Filename)
				if c.Heading != "" {
					where += " · " + c.Heading
				}
				fmt.Fprintf(a.out, "\n%d. %s #%d (score %.4f)\n   %s\n", i+1, where, c.Position, c.Score, strings.ReplaceAll(c.Text, "\n", "\n   "))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&topK, "top-k", knowledge.DefaultTopK, "how many passages to return")
	f.StringVar(&mode, "mode", "", "lexical, dense or fused (default: fused with an embedding model, else lexical)")
	f.StringArrayVar(&filters, "filter", nil, "document metadata key=value that must match: tags=TAG, filename=GLOB, or any key (repeatable)")
	f.DurationVar(&timeout, "timeout", 30*time.Second, "how long KnowledgeAgent may take")
	return cmd
}

// kbAsk sends one task to KnowledgeAgent and waits for its result.
func kbAsk(ctx context.Context, m *mesh, req schemas.TaskRequest, timeout time.Duration) (schemas.AgentResult, error) {
	ev, err := bus.NewEvent(bus.TypeTaskRequested, "/agentmesh/cli", req)
	if err != nil {
		return schemas.AgentResult{}, err
	}
	ev.DataContentType = bus.ContentTypeJSON
	ev.SetExt(bus.ExtDeadline, time.Now().Add(timeout).UTC().Format(time.RFC3339Nano))
	reply, err := sendDurable(ctx, m, knowledge.Name, "", ev, timeout)
	if err != nil {
		return schemas.AgentResult{}, err
	}
	rev, err := bus.Decode(reply)
	if err != nil {
		return schemas.AgentResult{}, fmt.Errorf("result of task %s: %w", ev.ID, err)
	}
	var res schemas.AgentResult
	if err := rev.DataAs(&res); err != nil {
		return schemas.AgentResult{}, err
	}
	return res, nil
}

func newKBRmCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "rm NAME",
		Short: "Remove a knowledge base (its documents stay stored); --json prints {\"removed\": NAME}",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := kbName(args[0]); err != nil {
				return err
			}
			kb, _, m, err := a.kbStores(cmd.Context())
			if err != nil {
				return err
			}
			defer m.Close()
			if err := kb.Remove(cmd.Context(), args[0]); err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]string{"removed": args[0]})
			}
			fmt.Fprintf(a.out, "removed knowledge base %s (its documents stay stored)\n", args[0])
			return nil
		},
	}
}
