package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/agentmesh/agentmesh/agents/builtin/knowledge"
	"github.com/agentmesh/agentmesh/agents/builtin/samples"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// sampleSet is what storeSamples stored: each file's sample name by id, and
// how many of each kind (schemas.ContentImages, schemas.ContentDocuments).
type sampleSet struct {
	names map[string]string
	kinds map[string]int
}

func (s sampleSet) String() string {
	return schemas.Plural(s.kinds[schemas.ContentImages], "image", "images") + " and " +
		schemas.Plural(s.kinds[schemas.ContentDocuments], "document", "documents")
}

// SamplesKB is the knowledge base of the sample documents.
const SamplesKB = "samples"

// storeSamples stores the generated sample images (sunsets, forests,
// seascapes, night cities, snow) and documents in obs, the mesh's file
// store, with the documents in the knowledge base SamplesKB (made when
// there is none), as demo, up and files samples do.
func storeSamples(ctx context.Context, obs jetstream.ObjectStore) (sampleSet, error) {
	files := resolvers.NewObjectStore(obs)
	set := sampleSet{names: map[string]string{}, kinds: map[string]int{}}
	var docs []string
	for _, s := range append(samples.Images(), samples.Documents()...) {
		ref, err := files.Store(ctx, bytes.NewReader(s.Content), s.MediaType, s.Metadata())
		if err != nil {
			return set, fmt.Errorf("store sample %s: %w", s.Name, err)
		}
		set.names[ref.ID] = s.Name
		set.kinds[resolvers.MediaKind(ref.MediaType)]++
		if knowledge.IsDocument(ref) {
			docs = append(docs, ref.ID)
		}
	}
	kb := knowledge.NewStore(obs)
	if _, err := kb.Create(ctx, SamplesKB, "the sample documents: notes, tips, a report, an overview and a refund policy"); err != nil && !errors.Is(err, knowledge.ErrBaseExists) {
		return set, err
	}
	if _, err := kb.Add(ctx, SamplesKB, docs...); err != nil {
		return set, err
	}
	return set, nil
}

// seedSamples stores the samples into a store that holds no file yet and
// says what it did; a store with files (a mesh started before, or one in
// use) is left as it is, so a restart adds nothing.
func seedSamples(ctx context.Context, obs jetstream.ObjectStore) (string, error) {
	for _, err := range resolvers.NewObjectStore(obs).List(ctx) {
		if err != nil {
			return "", err
		}
		return "the object store holds files already: no samples added", nil
	}
	set, err := storeSamples(ctx, obs)
	if err != nil {
		return "", err
	}
	return "stored " + set.String() + " as samples (documents in knowledge base " + SamplesKB + ")", nil
}

// newSamplesCmd is `files samples`, which compose's samples service runs;
// `up` does the same unless --empty.
func newSamplesCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "samples",
		Short: "Store the sample images and documents, unless the object store holds files already",
		Long: `files samples stores the sample files 'agentmesh up' and 'agentmesh demo' start
with: generated images (sunsets, forests, seascapes, night cities, snow) and a few
documents, which make the knowledge base "samples" (agentmesh kb search samples ...). An object store that holds any file already is left as it is, so it
is safe to run at every start (compose.yaml's samples service does).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := a.connect(cmd.Context(), "agentmesh files")
			if err != nil {
				return err
			}
			defer m.Close()
			msg, err := seedSamples(cmd.Context(), m.Res.Files)
			if err != nil {
				return err
			}
			fmt.Fprintln(a.out, msg)
			return nil
		},
	}
}
