package main

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentmesh/agentmesh/internal/browsertest"
)

// findChromium returns the browser the browser tests drive (see
// browsertest.Find).
func findChromium() (string, error) { return browsertest.Find() }

// browser starts a headless Chromium for one test and returns a tab's
// context (see browsertest.Tab); without Chromium the test is skipped.
func browser(t *testing.T, limit time.Duration) context.Context {
	t.Helper()
	return browsertest.Tab(t, limit)
}

// artifactDir and screenshot are browsertest's, named for this package's
// tests.
func artifactDir(t *testing.T) string { return browsertest.ArtifactDir(t) }

func screenshot(t *testing.T, tab context.Context, dir, name string) string {
	return browsertest.Screenshot(t, tab, dir, name)
}

// waitFor waits until the page has an element matching css, failing the
// test with what the page shows when it does not come within d.
func waitFor(t *testing.T, tab context.Context, d time.Duration, what, css string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, d)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.WaitReady(chromedp.CSS(css))); err != nil {
		text, _ := chromedp.Run(tab, chromedp.Evaluate[string](`document.getElementById("main").innerText`))
		t.Fatalf("%s: no %s after %s (%v); the page shows:\n%s", what, css, d, err, text)
	}
}

// pageText is the visible text of the dashboard's main area.
func pageText(t *testing.T, tab context.Context) string {
	t.Helper()
	text, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.getElementById("main").innerText`))
	if err != nil {
		t.Fatal(err)
	}
	return text
}
