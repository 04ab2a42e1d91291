package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// No count a person reads is printed as "%d <plural noun>", which says
// "1 categories": counts go through schemas.Plural. The check covers the
// CLI and the built-in agents, whose summaries the CLI prints.
func TestCountsUsePlural(t *testing.T) {
	bad := regexp.MustCompile(`%d (files|images|documents|links|categories|folders|steps|turns|words|characters|items|tool calls)\b`)
	for _, root := range []string{".", "../../agents/builtin"} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for i, line := range strings.Split(string(b), "\n") {
				if bad.MatchString(line) && !strings.Contains(line, "prompt") && !strings.Contains(line, "Summarise") {
					t.Errorf("%s:%d prints a count with a fixed plural; use schemas.Plural: %s", p, i+1, strings.TrimSpace(line))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
