package resolvers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/schemas"
)

// DefaultSpillThreshold is the size in bytes of a collection's IDs, encoded
// as a JSON array, above which the collection is spilled to the object store.
const DefaultSpillThreshold = 256 << 10

// CollectionPrefix starts the object name of every spilled collection; the
// rest of the name is the hex sha256 of the stored JSON array.
const CollectionPrefix = "collections/"

// Collections spills file collections too large for one message into the
// object store and reads them back. Spilled collections are content-addressed:
// the same IDs in the same order are stored once, under
// collections/<sha256 of the JSON array>.
//
// A Collections is safe for concurrent use.
type Collections struct {
	obs       jetstream.ObjectStore
	threshold int
}

// NewCollections returns a Collections on obs (the mesh_files store) that
// spills collections whose IDs, encoded as a JSON array, exceed threshold
// bytes. A threshold of 0 or less means DefaultSpillThreshold.
func NewCollections(obs jetstream.ObjectStore, threshold int) *Collections {
	if threshold <= 0 {
		threshold = DefaultSpillThreshold
	}
	return &Collections{obs: obs, threshold: threshold}
}

// Threshold is the spill threshold in bytes.
func (c *Collections) Threshold() int { return c.threshold }

// Spill returns fc unchanged when it is already spilled or its IDs fit under
// the threshold. Otherwise it stores the IDs and returns a spilled collection
// with the same count, content type and source capability. Storing is skipped
// when the same collection is already in the store.
func (c *Collections) Spill(ctx context.Context, fc schemas.FileCollection) (schemas.FileCollection, error) {
	if fc.Spilled() {
		return fc, nil
	}
	ids := fc.IDs()
	if idsSizeAtMost(ids, c.threshold) {
		return fc, nil
	}
	// First pass: hash and measure the encoding without keeping it.
	h := sha256.New()
	cw := &countingWriter{w: h}
	if err := writeIDs(cw, ids); err != nil {
		return fc, fmt.Errorf("spill collection of %d ids: %w", len(ids), err)
	}
	if cw.n <= int64(c.threshold) {
		return fc, nil
	}
	ref := CollectionPrefix + hex.EncodeToString(h.Sum(nil))
	spilled := schemas.SpilledCollection(ref, len(ids), fc.ContentType()).WithSource(fc.SourceCapability())

	switch info, err := c.obs.GetInfo(ctx, ref); {
	case err == nil && !info.Deleted && info.Size == uint64(cw.n):
		return spilled, nil // already stored: content-addressed
	case err != nil && !errors.Is(err, jetstream.ErrObjectNotFound):
		return fc, fmt.Errorf("spill collection %s: %w", ref, err)
	}

	// Second pass: stream the encoding into the object store.
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeIDs(pw, ids)) }()
	meta := jetstream.ObjectMeta{
		Name:        ref,
		Description: "spilled file collection",
		Metadata: map[string]string{
			"count":        strconv.Itoa(len(ids)),
			"content_type": fc.ContentType(),
		},
	}
	_, err := c.obs.Put(ctx, meta, fullReader{pr})
	pr.Close() // unblocks the writer if Put stopped early
	if err != nil {
		return fc, fmt.Errorf("spill collection %s (%d ids): %w", ref, len(ids), err)
	}
	return spilled, nil
}

// Resolve returns fc unchanged when it is not spilled, else loads its IDs
// from the object store. A missing collection is an error matching
// ErrNotFound; stored content that does not decode or whose count differs from
// the reference's matches ErrCorruptCollection.
func (c *Collections) Resolve(ctx context.Context, fc schemas.FileCollection) (schemas.FileCollection, error) {
	if !fc.Spilled() {
		return fc, nil
	}
	ref := fc.Ref()
	if !strings.HasPrefix(ref, CollectionPrefix) || len(ref) == len(CollectionPrefix) {
		return fc, fmt.Errorf("%w: collection_ref %q is not a spilled collection (want %s<sha256>)", ErrInvalidID, ref, CollectionPrefix)
	}
	res, err := c.obs.Get(ctx, ref)
	if err != nil {
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			return fc, fmt.Errorf("%w: spilled collection %q is not in the object store", ErrNotFound, ref)
		}
		return fc, fmt.Errorf("resolve collection %q: %w", ref, err)
	}
	defer res.Close()
	ids, err := readIDs(res, fc.Count())
	if err != nil {
		return fc, fmt.Errorf("%w: %q: %v", ErrCorruptCollection, ref, err)
	}
	out := schemas.FromIDs(fc.ContentType(), ids...)
	if out.Count() != fc.Count() {
		return fc, fmt.Errorf("%w: %q holds %d distinct ids but the reference says %d", ErrCorruptCollection, ref, out.Count(), fc.Count())
	}
	return out.WithSource(fc.SourceCapability()), nil
}

// SpillValue spills a FILE_IDS value's collection when it is too large and
// passes any other value through unchanged. The source, production time and
// content type hint are kept.
func (c *Collections) SpillValue(ctx context.Context, tv schemas.TypedValue) (schemas.TypedValue, error) {
	if tv.DataType != schemas.TypeFileIDs {
		return tv, nil
	}
	fc, err := tv.Files()
	if err != nil {
		return tv, err
	}
	if fc.Spilled() {
		return tv, nil
	}
	out, err := c.Spill(ctx, fc)
	if err != nil || !out.Spilled() {
		return tv, err
	}
	return withCollection(tv, out)
}

// ResolveValue loads a spilled FILE_IDS value's collection and passes any
// other value through unchanged. The source, production time and content type
// hint are kept.
func (c *Collections) ResolveValue(ctx context.Context, tv schemas.TypedValue) (schemas.TypedValue, error) {
	if tv.DataType != schemas.TypeFileIDs {
		return tv, nil
	}
	fc, err := tv.Files()
	if err != nil {
		return tv, err
	}
	if !fc.Spilled() {
		return tv, nil
	}
	out, err := c.Resolve(ctx, fc)
	if err != nil {
		return tv, err
	}
	return withCollection(tv, out)
}

func withCollection(tv schemas.TypedValue, fc schemas.FileCollection) (schemas.TypedValue, error) {
	raw, err := fc.MarshalJSON()
	if err != nil {
		return tv, err
	}
	tv.Value = raw
	return tv, nil
}

// idsSizeAtMost reports, without encoding, whether the JSON array of ids is
// certainly no larger than limit. It undercounts only escapes, so a false
// answer is checked by encoding.
func idsSizeAtMost(ids []string, limit int) bool {
	n := 2
	for _, id := range ids {
		n += len(id) + 3 // quotes and comma
		if n > limit {
			return false
		}
	}
	for _, id := range ids {
		for i := 0; i < len(id); i++ {
			if b := id[i]; b < 0x20 || b == '"' || b == '\\' || b == '<' || b == '>' || b == '&' || b >= 0x80 {
				return false // escapes may grow it: let the encoder decide
			}
		}
	}
	return true
}

// writeIDs writes ids as a JSON array, one string at a time.
func writeIDs(w io.Writer, ids []string) error {
	if _, err := io.WriteString(w, "["); err != nil {
		return err
	}
	for i, id := range ids {
		b, err := json.Marshal(id)
		if err != nil {
			return err
		}
		if i > 0 {
			if _, err := io.WriteString(w, ","); err != nil {
				return err
			}
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, "]")
	return err
}

// readIDs decodes a JSON array of strings one element at a time.
func readIDs(r io.Reader, sizeHint int) ([]string, error) {
	dec := json.NewDecoder(r)
	if tok, err := dec.Token(); err != nil {
		return nil, err
	} else if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, fmt.Errorf("want a JSON array of ids, found %v", tok)
	}
	ids := make([]string, 0, max(0, min(sizeHint, 1<<24)))
	for dec.More() {
		if len(ids) == sizeHint { // more than the reference says: stop reading
			return nil, fmt.Errorf("holds more than the %d ids the reference says", sizeHint)
		}
		var id string
		if err := dec.Decode(&id); err != nil {
			return nil, fmt.Errorf("ids[%d]: %w", len(ids), err)
		}
		ids = append(ids, id)
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if len(ids) != sizeHint {
		return nil, fmt.Errorf("holds %d ids but the reference says %d", len(ids), sizeHint)
	}
	return ids, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// fullReader fills every Read as far as the data goes. The object store sends
// one chunk per Read, so a reader that returns a few bytes at a time (a pipe,
// a terminal) would otherwise become thousands of tiny messages.
type fullReader struct{ r io.Reader }

func (f fullReader) Read(p []byte) (int, error) {
	n, err := io.ReadFull(f.r, p)
	if err == io.ErrUnexpectedEOF {
		err = io.EOF
	}
	return n, err
}
