package main

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEShowsThisProgram keeps the README's "Writing an agent in Go"
// example identical to this compiled program.
func TestREADMEShowsThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	code := string(src)
	code = code[strings.Index(code, "package main"):]
	if !strings.Contains(string(readme), "```go\n"+code+"```") {
		t.Fatal("README.md's Go agent example differs from examples/goagent/main.go; copy main.go (from 'package main') into the README")
	}
}
