package main

import (
	"bytes"
	"context"
	"fmt"

	"github.com/spf13/cobra"

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

// storeSamples stores the generated sample images (sunsets, forests,
// seascapes, night cities, snow) and documents, as demo, up and files
// samples do.
func storeSamples(ctx context.Context, files *resolvers.ObjectStore) (sampleSet, error) {
	set := sampleSet{names: map[string]string{}, kinds: map[string]int{}}
	for _, s := range append(samples.Images(), samples.Documents()...) {
		ref, err := files.Store(ctx, bytes.NewReader(s.Content), s.MediaType, s.Metadata())
		if err != nil {
			return set, fmt.Errorf("store sample %s: %w", s.Name, err)
		}
		set.names[ref.ID] = s.Name
		set.kinds[resolvers.MediaKind(ref.MediaType)]++
	}
	return set, nil
}

// seedSamples stores the samples into a store that holds no file yet and
// says what it did; a store with files (a mesh started before, or one in
// use) is left as it is, so a restart adds nothing.
func seedSamples(ctx context.Context, files *resolvers.ObjectStore) (string, error) {
	for _, err := range files.List(ctx) {
		if err != nil {
			return "", err
		}
		return "the object store holds files already: no samples added", nil
	}
	set, err := storeSamples(ctx, files)
	if err != nil {
		return "", err
	}
	return "stored " + set.String() + " as samples", nil
}

// newSamplesCmd is `files samples`, which compose's samples service runs;
// `up` does the same unless --empty.
func newSamplesCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "samples",
		Short: "Store the sample images and documents, unless the object store holds files already",
		Long: `files samples stores the sample files 'agentmesh up' and 'agentmesh demo' start
with: generated images (sunsets, forests, seascapes, night cities, snow) and a few
documents. An object store that holds any file already is left as it is, so it
is safe to run at every start (compose.yaml's samples service does).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, done, err := a.fileStore(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			msg, err := seedSamples(cmd.Context(), store)
			if err != nil {
				return err
			}
			fmt.Fprintln(a.out, msg)
			return nil
		},
	}
}
