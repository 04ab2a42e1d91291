package resolvers

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/schemas"
)

// Select lists the stored files in folder (any folder when "") of kind
// (any when "", see MatchesKind), sorted by folder, name and id; an empty
// selection is an empty, non-nil slice. Both `agentmesh files ls` and the
// gateway's GET /api/files list this way.
func (o *ObjectStore) Select(ctx context.Context, folder, kind string) ([]schemas.FileRef, error) {
	refs := []schemas.FileRef{}
	for ref, err := range o.List(ctx) {
		if err != nil {
			return nil, err
		}
		if folder != "" && ref.Metadata[MetaFolder] != folder {
			continue
		}
		if kind != "" && !MatchesKind(ref.MediaType, kind) {
			continue
		}
		refs = append(refs, ref)
	}
	slices.SortFunc(refs, func(x, y schemas.FileRef) int {
		return cmp.Or(cmp.Compare(x.Metadata[MetaFolder], y.Metadata[MetaFolder]),
			cmp.Compare(x.Filename, y.Filename), cmp.Compare(x.ID, y.ID))
	})
	return refs, nil
}

// MatchesKind reports whether mediaType is of kind: a collection content
// type (images, documents, links; see MediaKind) or a media type prefix
// such as image/png or text/, compared without regard to case.
func MatchesKind(mediaType, kind string) bool {
	switch kind {
	case schemas.ContentImages, schemas.ContentDocuments, schemas.ContentLinks:
		return MediaKind(mediaType) == kind
	}
	return strings.HasPrefix(strings.ToLower(mediaType), strings.ToLower(kind))
}
