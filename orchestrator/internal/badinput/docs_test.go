package badinput

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// docs/errors.md lists every error code declared in package schemas.
func TestErrorsDocListsEveryCode(t *testing.T) {
	src, err := os.ReadFile("../../../schemas/result.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../../docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	codes := regexp.MustCompile(`(?m)^\s*Code\w+\s*=\s*"(\w+)"`).FindAllStringSubmatch(string(src), -1)
	if len(codes) < 17 {
		t.Fatalf("found %d codes in schemas/result.go; the pattern is stale", len(codes))
	}
	for _, c := range codes {
		if !strings.Contains(string(doc), "| `"+c[1]+"` |") {
			t.Errorf("docs/errors.md has no row for the code %q", c[1])
		}
	}
}
