package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

func init() { register(newFilesCmd) }

// Progress is shown on a terminal for at least this many files or bytes.
const (
	progressMinFiles = 5
	progressMinBytes = 16 << 20
)

func newFilesCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "files",
		Short: "Store, list, fetch and remove files in the mesh's object store",
		Long: `Files live in the JetStream object store of the mesh under generated IDs.
Agents pass the IDs around; content moves only when an agent reads it.
On a secure mesh a client's credentials see only the client's own bucket,
mesh_files_NAME (made by 'agentmesh creds client NAME'), where the agents
of its runs, conversations and direct calls store their files too.`,
	}
	cmd.AddCommand(newFilesPutCmd(a), newFilesLsCmd(a), newFilesGetCmd(a), newFilesRmCmd(a), newFilesInfoCmd(a), newSamplesCmd(a))
	return cmd
}

func newFilesPutCmd(a *app) *cobra.Command {
	var tags []string
	var folder string
	cmd := &cobra.Command{
		Use:   "put PATH...",
		Short: "Store files (globs and directories are expanded) and print their IDs",
		Example: `  agentmesh files put photos/ --tag holiday --folder inbox
  agentmesh files put '*.jpg' report.pdf --json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, total, err := expandPaths(args)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			store, done, err := a.fileStore(ctx)
			if err != nil {
				return err
			}
			defer done()

			meta := map[string]string{}
			if len(tags) > 0 {
				meta[resolvers.MetaTags] = strings.Join(tags, ",")
			}
			if folder != "" {
				meta[resolvers.MetaFolder] = folder
			}
			var bar *progressbar.ProgressBar
			if isTerminal(a.errOut) && (len(paths) >= progressMinFiles || total >= progressMinBytes) {
				bar = progressbar.NewOptions64(total,
					progressbar.OptionSetWriter(a.errOut),
					progressbar.OptionSetDescription("storing "+schemas.Plural(len(paths), "file", "files")),
					progressbar.OptionShowBytes(true),
					progressbar.OptionShowCount(),
					progressbar.OptionClearOnFinish(),
					progressbar.OptionThrottle(100e6))
				defer bar.Close()
			}

			refs := make([]schemas.FileRef, 0, len(paths))
			var errs []error
			for _, p := range paths {
				ref, err := putFile(ctx, store, p, meta, bar)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				refs = append(refs, ref)
				if !a.jsonOut {
					fmt.Fprintf(a.out, "%s\t%s\n", ref.ID, p)
				}
			}
			if bar != nil {
				_ = bar.Finish()
			}
			if a.jsonOut {
				if err := a.printJSON(refs); err != nil {
					return err
				}
			}
			if len(errs) > 0 {
				return fmt.Errorf("%d of %s not stored: %w", len(errs), schemas.Plural(len(paths), "file", "files"), errors.Join(errs...))
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&tags, "tag", nil, "tag the files (repeatable)")
	cmd.Flags().StringVar(&folder, "folder", "", "put the files in this folder")
	return cmd
}

func putFile(ctx context.Context, store *resolvers.ObjectStore, path string, meta map[string]string, bar *progressbar.ProgressBar) (schemas.FileRef, error) {
	f, err := os.Open(path)
	if err != nil {
		return schemas.FileRef{}, err
	}
	defer f.Close()
	m := map[string]string{resolvers.MetaFilename: filepath.Base(path)}
	maps.Copy(m, meta)
	var r io.Reader = f
	if bar != nil {
		r = io.TeeReader(f, bar)
	}
	ref, err := store.Store(ctx, r, "", m)
	if err != nil {
		return ref, fmt.Errorf("%s: %w", path, err)
	}
	return ref, nil
}

// expandPaths turns the arguments into regular files: globs are expanded,
// directories walked. It refuses an argument that matches nothing.
func expandPaths(args []string) (paths []string, total int64, err error) {
	seen := map[string]bool{}
	add := func(p string, size int64) {
		if !seen[p] {
			seen[p] = true
			paths = append(paths, p)
			total += size
		}
	}
	for _, arg := range args {
		matches := []string{arg}
		if strings.ContainsAny(arg, "*?[") {
			matches, err = filepath.Glob(arg)
			if err != nil {
				return nil, 0, fmt.Errorf("bad pattern %q: %w", arg, err)
			}
			if len(matches) == 0 {
				return nil, 0, fmt.Errorf("%q matches no file", arg)
			}
		}
		for _, m := range matches {
			st, err := os.Stat(m)
			if err != nil {
				return nil, 0, fmt.Errorf("%s: %w", m, errors.Unwrap(err))
			}
			if !st.IsDir() {
				add(m, st.Size())
				continue
			}
			err = filepath.WalkDir(m, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if !d.Type().IsRegular() {
					return nil
				}
				info, err := d.Info()
				if err != nil {
					return err
				}
				add(p, info.Size())
				return nil
			})
			if err != nil {
				return nil, 0, fmt.Errorf("walking %s: %w", m, err)
			}
		}
	}
	if len(paths) == 0 {
		return nil, 0, fmt.Errorf("no files under %s", strings.Join(args, ", "))
	}
	return paths, total, nil
}

func newFilesLsCmd(a *app) *cobra.Command {
	var folder, kind string
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List stored files",
		Long: `List stored files as a table: id, name, media type, size, folder, tags.
--type is images, documents, links, or a media type prefix such as image/png or text/.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			store, done, err := a.fileStore(ctx)
			if err != nil {
				return err
			}
			defer done()
			refs, err := store.Select(ctx, folder, kind)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(refs)
			}
			tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tTYPE\tSIZE\tFOLDER\tTAGS")
			for _, r := range refs {
				mt, _, _ := strings.Cut(r.MediaType, ";")
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, orDash(r.Filename), orDash(mt), humanSize(r.Size),
					orDash(r.Metadata[resolvers.MetaFolder]), orDash(r.Metadata[resolvers.MetaTags]))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(refs) == 0 {
				fmt.Fprintln(a.errOut, "no files; store some with 'agentmesh files put PATH'")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&folder, "folder", "", "only files in this folder")
	cmd.Flags().StringVar(&kind, "type", "", "only images, documents, links, or a media type prefix")
	return cmd
}

func newFilesGetCmd(a *app) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "get ID",
		Short: "Write a file's content to stdout or to -o PATH",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			ctx := cmd.Context()
			store, done, err := a.fileStore(ctx)
			if err != nil {
				return err
			}
			defer done()
			rc, ref, err := store.Open(ctx, args[0])
			if err != nil {
				return err
			}
			defer rc.Close()
			if out == "" || out == "-" {
				_, err = io.Copy(a.out, rc)
				return err
			}
			// Write next to the target and rename, so a failed read never
			// leaves a truncated file under the asked-for name.
			tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".part-*")
			if err != nil {
				return err
			}
			defer func() {
				if err != nil {
					_ = os.Remove(tmp.Name())
				}
			}()
			n, err := io.Copy(tmp, rc)
			if cerr := tmp.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("reading %s: %w", args[0], err)
			}
			if err := os.Rename(tmp.Name(), out); err != nil {
				return err
			}
			fmt.Fprintf(a.errOut, "wrote %s (%s, %s) to %s\n", ref.ID, orDash(ref.Filename), humanSize(n), out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to this path instead of stdout")
	return cmd
}

func newFilesRmCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "rm ID...",
		Short: "Remove files; --json prints {\"removed\": [IDs]}",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			store, done, err := a.fileStore(ctx)
			if err != nil {
				return err
			}
			defer done()
			var errs []error
			removed := []string{}
			for _, id := range args {
				if err := store.Delete(ctx, id); err != nil {
					errs = append(errs, err)
					continue
				}
				removed = append(removed, id)
				if !a.jsonOut {
					fmt.Fprintf(a.out, "removed %s\n", id)
				}
			}
			if a.jsonOut {
				if err := a.printJSON(map[string][]string{"removed": removed}); err != nil {
					return err
				}
			}
			return errors.Join(errs...)
		},
	}
}

func newFilesInfoCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "info ID",
		Short: "Show a file's name, media type, size, sha256 and metadata",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			store, done, err := a.fileStore(ctx)
			if err != nil {
				return err
			}
			defer done()
			ref, err := store.ResolveMetadata(ctx, args[0])
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(ref)
			}
			tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "id:\t%s\n", ref.ID)
			fmt.Fprintf(tw, "name:\t%s\n", orDash(ref.Filename))
			fmt.Fprintf(tw, "type:\t%s\n", orDash(ref.MediaType))
			fmt.Fprintf(tw, "size:\t%s (%d bytes)\n", humanSize(ref.Size), ref.Size)
			fmt.Fprintf(tw, "sha256:\t%s\n", orDash(ref.SHA256))
			for _, k := range slices.Sorted(maps.Keys(ref.Metadata)) {
				fmt.Fprintf(tw, "%s:\t%s\n", k, ref.Metadata[k])
			}
			return tw.Flush()
		},
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// humanSize formats n bytes in IEC units.
func humanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// isTerminal reports whether w is a character device such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// fileStore connects to the mesh and returns its object store; done closes
// the connection.
func (a *app) fileStore(ctx context.Context) (store *resolvers.ObjectStore, done func(), err error) {
	m, err := a.connect(ctx, "agentmesh files")
	if err != nil {
		return nil, nil, err
	}
	store, err = m.files(ctx)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return store, m.Close, nil
}
