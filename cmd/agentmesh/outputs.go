package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// How much of a value the CLI shows. Whatever is left out is counted, and
// the view says it was clipped; `agentmesh state show --json ID` has it all.
const (
	textLimit   = 4000 // characters of a TEXT value
	firstLimit  = 5    // names of a collection or of one group
	groupLimit  = 20   // groups (categories, folders)
	nameLookups = 50   // object store look-ups per command, for file names
)

// valueView is one value as every command shows it: the same fields in
// human and in JSON output ("views" in the JSON of chat, run, watch and task).
type valueView struct {
	Name     string `json:"name"`
	DataType string `json:"data_type"`
	Hint     string `json:"content_type_hint,omitempty"`
	Source   string `json:"source,omitempty"`
	// Text is a TEXT value, whole up to textLimit characters; Length counts
	// the characters of the whole value.
	Text   string `json:"text,omitempty"`
	Length int    `json:"length,omitempty"`
	// Count is the number of files, items or links; First the names (file
	// names where the object store knows them, else ids) of the first.
	Count int      `json:"count,omitempty"`
	First []string `json:"first,omitempty"`
	// Groups are the categories of a CATEGORIZATION or the folders of a
	// FOLDER_RESULT, each with its count and first names.
	Groups []groupView `json:"groups,omitempty"`
	// Summary is one line for what has no richer view: the clipped JSON of
	// a type the CLI does not know, or a one-line note.
	Summary string `json:"summary,omitempty"`
	Spilled bool   `json:"spilled,omitempty"` // a FILE_IDS collection kept in the object store
	Clipped bool   `json:"clipped,omitempty"` // something above was shortened
	Error   string `json:"error,omitempty"`   // the value does not decode as its type
}

// groupView is one category or folder.
type groupView struct {
	Name  string   `json:"name"`
	Count int      `json:"count"`
	First []string `json:"first,omitempty"`
}

// viewer builds value views; it resolves file names from the object store's
// metadata, a bounded number of times per command.
type viewer struct {
	ctx     context.Context
	files   *resolvers.ObjectStore // nil: ids are shown as they are
	names   map[string]string
	lookups int
}

func newViewer(ctx context.Context, m *mesh) *viewer {
	v := &viewer{ctx: ctx, names: map[string]string{}}
	if m != nil && m.Res != nil && m.Res.Files != nil {
		v.files, _ = m.files(ctx) // a client without its bucket sees ids
	}
	return v
}

// name returns the file name stored with id, or id.
func (v *viewer) name(id string) string {
	if n, ok := v.names[id]; ok {
		return n
	}
	n := id
	if v.files != nil && v.lookups < nameLookups {
		v.lookups++
		ctx, cancel := context.WithTimeout(v.ctx, 500*time.Millisecond)
		if ref, err := v.files.ResolveMetadata(ctx, id); err == nil && ref.Filename != "" {
			n = ref.Filename
		}
		cancel()
	}
	v.names[id] = n
	return n
}

// first names the first firstLimit ids; clipped says some were left out.
func (v *viewer) first(ids []string) (names []string, clipped bool) {
	for i, id := range ids {
		if i == firstLimit {
			return names, true
		}
		names = append(names, v.name(id))
	}
	return names, false
}

// views describes every value of outs, in name order.
func (v *viewer) views(outs map[string]schemas.TypedValue) []valueView {
	out := make([]valueView, 0, len(outs))
	for _, n := range slices.Sorted(maps.Keys(outs)) {
		out = append(out, v.view(n, outs[n]))
	}
	return out
}

// view describes one value by its data type. It is the CLI's one
// per-type piece, richer than the data type descriptors' one line: TEXT
// whole up to a limit, FILE_IDS as a count and the first file names,
// CATEGORIZATION and FOLDER_RESULT as trees, ANALYSIS_RESULT and CROSS_REF
// as counts and the first items; any other type as its descriptor
// describes it, with its clipped JSON.
func (v *viewer) view(name string, tv schemas.TypedValue) valueView {
	out := valueView{Name: name, DataType: tv.DataType, Hint: tv.ContentTypeHint, Source: strings.TrimSpace(tv.Source)}
	var err error
	switch tv.DataType {
	case schemas.TypeText:
		var s string
		if s, err = tv.Text(); err == nil {
			out.Length = utf8.RuneCountInString(s)
			out.Text = schemas.Clip(s, textLimit)
			out.Clipped = out.Length > textLimit
		}
	case schemas.TypeFileIDs:
		var fc schemas.FileCollection
		if fc, err = tv.Files(); err == nil {
			out.Count, out.Spilled = fc.Count(), fc.Spilled()
			if !fc.Spilled() {
				out.First, out.Clipped = v.first(fc.IDs())
			}
		}
	case schemas.TypeCategorization:
		var c schemas.Categorization
		if err = tv.Decode(&c); err == nil {
			out.Groups, out.Count, out.Clipped = v.groups(c.Categories)
		}
	case schemas.TypeFolderResult:
		var f schemas.FolderResult
		if err = tv.Decode(&f); err == nil {
			out.Groups, out.Count, out.Clipped = v.groups(f.Folders)
		}
	case schemas.TypeAnalysisResult:
		var r schemas.AnalysisResult
		if err = tv.Decode(&r); err == nil {
			out.Count = len(r.Items)
			for i, it := range r.Items {
				if i == firstLimit {
					out.Clipped = true
					break
				}
				item := v.name(it.ID)
				if len(it.Labels) > 0 {
					item += ": " + strings.Join(it.Labels, ", ")
				}
				out.First = append(out.First, item)
			}
		}
	case schemas.TypeCrossRef:
		var r schemas.CrossRef
		if err = tv.Decode(&r); err == nil {
			out.Count = len(r.Links)
			for i, l := range r.Links {
				if i == firstLimit {
					out.Clipped = true
					break
				}
				out.First = append(out.First, fmt.Sprintf("%s -%s-> %s", v.name(l.From), l.Relation, v.name(l.To)))
			}
		}
	default:
		// Any other type (one an agent declared) is described by its
		// descriptor, or generically: a count, then its clipped JSON.
		out.Count = schemas.DefaultRegistry().Count(tv)
		value := schemas.Clip(string(tv.Value), 200)
		out.Summary = schemas.DefaultRegistry().Describe(tv) + ": " + value
		out.Clipped = len(value) < len(tv.Value)
	}
	if err != nil {
		out.Error = err.Error()
	}
	return out
}

// groups views named groups of file ids, in name order, at most groupLimit;
// total counts the files of all groups.
func (v *viewer) groups(m map[string][]string) (out []groupView, total int, clipped bool) {
	for _, g := range slices.Sorted(maps.Keys(m)) {
		total += len(m[g])
		if len(out) == groupLimit {
			clipped = true
			continue
		}
		first, c := v.first(m[g])
		clipped = clipped || c
		out = append(out, groupView{Name: g, Count: len(m[g]), First: first})
	}
	return out, total, clipped
}

// headline is the one-line description of a view, after its name and type.
func (vv valueView) headline() string {
	switch {
	case vv.Error != "":
		return "cannot be read: " + vv.Error
	case vv.DataType == schemas.TypeText:
		return schemas.Plural(vv.Length, "character", "characters")
	case vv.DataType == schemas.TypeFileIDs:
		s := schemas.Plural(vv.Count, "file", "files")
		if one, ok := strings.CutSuffix(vv.Hint, "s"); ok && one != "" {
			s = schemas.Plural(vv.Count, one, vv.Hint) // images, documents, links
		}
		if vv.Spilled {
			s += ", kept in the object store"
		}
		return s
	case vv.DataType == schemas.TypeCategorization:
		return schemas.Plural(len(vv.Groups), "category", "categories") + ", " + schemas.Plural(vv.Count, "file", "files")
	case vv.DataType == schemas.TypeFolderResult:
		return schemas.Plural(len(vv.Groups), "folder", "folders") + ", " + schemas.Plural(vv.Count, "file", "files")
	case vv.DataType == schemas.TypeAnalysisResult:
		return schemas.Plural(vv.Count, "item", "items")
	case vv.DataType == schemas.TypeCrossRef:
		return schemas.Plural(vv.Count, "link", "links")
	}
	return vv.Summary
}

// printViews writes views for a reader: a line per value, then its text,
// names or tree of groups indented below it.
func printViews(w io.Writer, indent string, views []valueView) {
	for _, vv := range views {
		typ := vv.DataType
		if vv.Hint != "" {
			typ += "/" + vv.Hint
		}
		head := vv.headline()
		if vv.shortText() {
			head = fmt.Sprintf("%q", vv.Text)
		}
		line := fmt.Sprintf("%s%s (%s): %s", indent, vv.Name, typ, head)
		if vv.Source != "" {
			line += " · from " + vv.Source
		}
		fmt.Fprintln(w, line)
		if !vv.shortText() {
			printViewBody(w, indent+"  ", vv)
		}
	}
}

// shortText reports a TEXT value that fits on its headline.
func (vv valueView) shortText() bool {
	return vv.Text != "" && !vv.Clipped && len(vv.Text) <= 100 && !strings.Contains(vv.Text, "\n")
}

// printViewBody writes what a view holds below its headline: a text's
// lines, a tree of groups, or the first names.
func printViewBody(w io.Writer, indent string, vv valueView) {
	switch {
	case vv.Text != "":
		for _, l := range strings.Split(vv.Text, "\n") {
			fmt.Fprintln(w, indent+"│ "+l)
		}
	case len(vv.Groups) > 0:
		printTree(w, indent, vv)
	default:
		for _, n := range vv.First {
			fmt.Fprintln(w, indent+"- "+n)
		}
	}
	if vv.Clipped {
		fmt.Fprintf(w, "%s(clipped; agentmesh state show --json has the whole value)\n", indent)
	}
}

// printTree draws groups as a tree: folders get a trailing slash.
func printTree(w io.Writer, indent string, vv valueView) {
	slash := ""
	if vv.DataType == schemas.TypeFolderResult {
		slash = "/"
	}
	for i, g := range vv.Groups {
		branch, stem := "├── ", "│   "
		if i == len(vv.Groups)-1 {
			branch, stem = "└── ", "    "
		}
		fmt.Fprintf(w, "%s%s%s%s (%s)\n", indent, branch, g.Name, slash, schemas.Plural(g.Count, "file", "files"))
		for j, n := range g.First {
			leaf := "├── "
			if j == len(g.First)-1 && len(g.First) == g.Count {
				leaf = "└── "
			}
			fmt.Fprintf(w, "%s%s%s%s\n", indent, stem, leaf, n)
		}
		if more := g.Count - len(g.First); more > 0 {
			fmt.Fprintf(w, "%s%s└── … %d more\n", indent, stem, more)
		}
	}
}

// withViews adds the views of an event's outputs to its JSON form, under
// "views".
func withViews(ev map[string]any, views []valueView) map[string]any {
	if views != nil {
		ev["views"] = views
	}
	return ev
}

// jsonLine writes v as one line of JSON (JSON Lines).
func (a *app) jsonLine(v any) error {
	return json.NewEncoder(a.out).Encode(v)
}
