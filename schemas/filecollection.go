package schemas

import (
	"encoding/json"
	"fmt"
)

// Content types of a FileCollection. The set is open: an unknown string is
// carried as it is.
const (
	ContentImages    = "images"
	ContentDocuments = "documents"
	ContentLinks     = "links"
	ContentMixed     = "mixed"
)

// FileCollection is an immutable, ordered set of file IDs with the kind of
// content they hold. Methods return new values and never share the backing
// array with their receiver.
//
// A collection too large for one message is spilled to the object store and
// carried by reference: Spilled reports true, IDs is empty and Ref names the
// stored object. Resolvers turn it back into a plain collection.
type FileCollection struct {
	ids              []string
	contentType      string
	sourceCapability string
	count            int
	ref              string
}

// FromIDs returns a collection of the given IDs in order, dropping empty and
// duplicate IDs (the first occurrence wins).
func FromIDs(contentType string, ids ...string) FileCollection {
	return FileCollection{ids: dedup(nil, ids), contentType: contentType, count: -1}.settle()
}

// SpilledCollection returns a reference to a collection stored in the object
// store under ref, holding count IDs.
func SpilledCollection(ref string, count int, contentType string) FileCollection {
	return FileCollection{ref: ref, count: count, contentType: contentType}
}

func (c FileCollection) settle() FileCollection {
	if c.ref == "" {
		c.count = len(c.ids)
	}
	return c
}

// IDs returns a copy of the IDs in order. It is nil for a spilled collection.
func (c FileCollection) IDs() []string {
	if len(c.ids) == 0 {
		return nil
	}
	return append([]string(nil), c.ids...)
}

// Count is the number of IDs, also for a spilled collection.
func (c FileCollection) Count() int { return c.count }

// ContentType is images, documents, links, mixed or a custom kind.
func (c FileCollection) ContentType() string { return c.contentType }

// SourceCapability names the capability of the agent that produced the collection.
func (c FileCollection) SourceCapability() string { return c.sourceCapability }

// Spilled reports whether the IDs live in the object store rather than in the value.
func (c FileCollection) Spilled() bool { return c.ref != "" }

// Ref is the object name of a spilled collection, or "".
func (c FileCollection) Ref() string { return c.ref }

// WithSource returns a copy whose source capability is capability.
func (c FileCollection) WithSource(capability string) FileCollection {
	c.ids = c.IDs()
	c.sourceCapability = capability
	return c
}

// WithContentType returns a copy with another content type.
func (c FileCollection) WithContentType(contentType string) FileCollection {
	c.ids = c.IDs()
	c.contentType = contentType
	return c
}

// Contains reports whether id is in the collection.
func (c FileCollection) Contains(id string) bool {
	for _, x := range c.ids {
		if x == id {
			return true
		}
	}
	return false
}

// Merge combines collections in order, keeping the first occurrence of each ID.
// The content type is the shared one, or mixed when the non-empty inputs
// disagree. A spilled input cannot be merged before it is resolved: the error
// wraps ErrSpilled.
func Merge(cols ...FileCollection) (FileCollection, error) {
	var out FileCollection
	total := 0
	for _, c := range cols {
		if c.Spilled() {
			return FileCollection{}, fmt.Errorf("merge: %w (ref %q)", ErrSpilled, c.ref)
		}
		total += len(c.ids)
	}
	out.ids = make([]string, 0, total)
	seen := make(map[string]struct{}, total)
	for i, c := range cols {
		out.ids = dedupInto(out.ids, seen, c.ids)
		switch {
		case i == 0:
			out.contentType, out.sourceCapability = c.contentType, c.sourceCapability
		case len(c.ids) == 0:
		case out.contentType != c.contentType && out.count > 0:
			out.contentType = ContentMixed
		case out.count == 0 && len(c.ids) > 0:
			out.contentType = c.contentType
		}
		if c.sourceCapability != out.sourceCapability {
			out.sourceCapability = ""
		}
		out.count = len(out.ids)
	}
	if len(out.ids) == 0 {
		out.ids = nil
	}
	return out, nil
}

func dedup(dst []string, ids []string) []string {
	return dedupInto(dst, make(map[string]struct{}, len(ids)), ids)
}

func dedupInto(dst []string, seen map[string]struct{}, ids []string) []string {
	for _, id := range ids {
		if id == "" {
			continue
		}
		if _, dup := seen[id]; dup {
			continue
		}
		seen[id] = struct{}{}
		dst = append(dst, id)
	}
	return dst
}

// collectionJSON is the wire shape of a FileCollection.
type collectionJSON struct {
	IDs              []string `json:"ids,omitempty"`
	CollectionRef    string   `json:"collection_ref,omitempty"`
	ContentType      string   `json:"content_type,omitempty"`
	SourceCapability string   `json:"source_capability,omitempty"`
	Count            *int     `json:"count,omitempty"`
}

// MarshalJSON writes {"ids", "content_type", "source_capability", "count"},
// or {"collection_ref", "count", "content_type"} when spilled.
func (c FileCollection) MarshalJSON() ([]byte, error) {
	if c.ref != "" {
		n := c.count
		return json.Marshal(collectionJSON{CollectionRef: c.ref, ContentType: c.contentType, SourceCapability: c.sourceCapability, Count: &n})
	}
	ids := c.ids
	if ids == nil {
		ids = []string{}
	}
	return json.Marshal(struct {
		IDs              []string `json:"ids"`
		ContentType      string   `json:"content_type,omitempty"`
		SourceCapability string   `json:"source_capability,omitempty"`
		Count            int      `json:"count"`
	}{ids, c.contentType, c.sourceCapability, len(c.ids)})
}

// UnmarshalJSON reads either wire shape. A count that disagrees with the
// number of IDs, duplicate IDs or an empty ID are errors: a collection is a
// set, and silently repairing it would hide a producer's bug.
func (c *FileCollection) UnmarshalJSON(b []byte) error {
	var w collectionJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("file collection: %w", err)
	}
	if w.CollectionRef != "" {
		if len(w.IDs) > 0 {
			return fmt.Errorf("file collection: both ids and collection_ref %q are set; send one", w.CollectionRef)
		}
		if w.Count == nil || *w.Count < 0 {
			return fmt.Errorf("file collection: collection_ref %q needs a non-negative count", w.CollectionRef)
		}
		*c = FileCollection{ref: w.CollectionRef, count: *w.Count, contentType: w.ContentType, sourceCapability: w.SourceCapability}
		return nil
	}
	seen := make(map[string]struct{}, len(w.IDs))
	for i, id := range w.IDs {
		if id == "" {
			return fmt.Errorf("file collection: ids[%d] is empty", i)
		}
		if _, dup := seen[id]; dup {
			return fmt.Errorf("file collection: ids[%d] %q appears twice", i, id)
		}
		seen[id] = struct{}{}
	}
	if w.Count != nil && *w.Count != len(w.IDs) {
		return fmt.Errorf("file collection: count is %d but %d ids were sent", *w.Count, len(w.IDs))
	}
	*c = FileCollection{ids: w.IDs, count: len(w.IDs), contentType: w.ContentType, sourceCapability: w.SourceCapability}
	return nil
}
