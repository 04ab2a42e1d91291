// Package browsertest drives a real headless Chromium for tests of what
// the mesh serves to browsers (the dashboard, the gateway's defences).
// Without Chromium a test is skipped, saying why and how to install it.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPaths are where Debian's chromium package (which .ci/run
// installs) and other distributions put the browser.
var chromiumPaths = []string{"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome", "/usr/bin/google-chrome-stable"}

// Find returns the browser to drive: $AGENTMESH_CHROMIUM, else the first
// of chromiumPaths that exists, else chromium on $PATH.
func Find() (string, error) {
	if p := os.Getenv("AGENTMESH_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("AGENTMESH_CHROMIUM=%s: %w", p, err)
		}
		return p, nil
	}
	for _, p := range chromiumPaths {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("no Chromium at %s or on $PATH; install Debian's chromium package (apt-get install chromium) or set AGENTMESH_CHROMIUM", strings.Join(chromiumPaths, ", "))
}

// Tab starts a headless Chromium with a fresh profile for one test and
// returns a tab's context, which ends with the test or after limit. The
// flags keep the browser from reaching for the network (the machine's is
// closed), a GPU or a sandbox a container does not have. The browser's
// console is logged when the test fails. Without Chromium the test is
// skipped, saying why.
func Tab(t *testing.T, limit time.Duration) context.Context {
	t.Helper()
	path, err := Find()
	if err != nil {
		t.Skipf("browser test skipped: %v", err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 860),
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	var (
		mu      sync.Mutex
		console []string
	)
	tab, tcancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(tcancel)
	// The first action starts the browser; only then may another goroutine
	// use the tab.
	if err := chromedp.Do(tab, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	go func() {
		for m, err := range chromedp.Console(tab) {
			if err != nil {
				return
			}
			mu.Lock()
			console = append(console, m.String())
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		if t.Failed() && len(console) > 0 {
			t.Logf("browser console:\n%s", strings.Join(console, "\n"))
		}
	})
	return tab
}

// ArtifactDir is where a test's screenshots go: $AGENTMESH_ARTIFACTS when
// set (CI keeps it), else the test's temporary directory.
func ArtifactDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("AGENTMESH_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// Screenshot saves the whole page as dir/name (PNG) and returns its path.
func Screenshot(t *testing.T, tab context.Context, dir, name string) string {
	t.Helper()
	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
	return path
}

// Until evaluates the JavaScript expression expr in the tab until it is
// true, failing the test with what the page's main element shows when it
// is not within d.
func Until(t *testing.T, tab context.Context, d time.Duration, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, err := chromedp.Run(tab, chromedp.Evaluate[bool]("!!("+expr+")"))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			text, _ := chromedp.Run(tab, chromedp.Evaluate[string](`(document.getElementById("main") || document.body).innerText`))
			t.Fatalf("%s: %s is not true after %s (%v); the page shows:\n%s", what, expr, d, err, text)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Do runs actions on the tab, and again when the page redrew what they act
// on between finding it and using it ("Could not find node with given
// id": pages that redraw as events come), up to 5 times.
func Do(tab context.Context, actions ...chromedp.Action[chromedp.Void]) error {
	var err error
	for range 5 {
		if err = chromedp.Do(tab, actions...); err == nil || !strings.Contains(err.Error(), "Could not find node") {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}
