package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentmesh/agentmesh/internal/browsertest"
	"github.com/agentmesh/agentmesh/internal/memory"
)

// TestDashboardMemory drives the Memory page (gateway/ui/memory.js) in a
// real headless Chromium: it lists every identity's remembered facts, one
// identity's when the address names it, and Forget removes a fact from the
// page and from the mesh's memory. A fact's text stays text.
func TestDashboardMemory(t *testing.T) {
	if _, err := browsertest.Find(); err != nil {
		t.Skipf("browser test skipped: %v", err)
	}
	m := newTestMesh(t)
	store := memory.New(m.srv.JetStream(t), m.srv.Names())
	ctx := context.Background()
	var alice []memory.Fact
	for _, f := range []memory.Fact{
		{Identity: "alice", Text: "Alice works in Berlin", Source: "remember"},
		{Identity: "alice", Text: xss + " Alice likes green tea", Source: "slot:current_text"},
		{Identity: "bob", Text: "Bob is vegetarian", Source: "remember"},
	} {
		got, err := store.Remember(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if got.Identity == "alice" {
			alice = append(alice, got)
		}
	}

	d := &dashboard{m: m, tab: browsertest.Tab(t, 2*time.Minute), shots: browsertest.ArtifactDir(t)}
	const rows = `[...document.querySelectorAll("#memory tr.fact")].map((r) => r.dataset.id).join()`
	d.open(t, "#/memory")
	d.until(t, "every identity's three facts", rows+`.split(",").length === 3`)
	d.open(t, "#/memory?identity=alice")
	d.until(t, "alice's two facts, in the order remembered", rows+` === "`+alice[0].ID+`,`+alice[1].ID+`"`)
	if text := d.eval(t, `document.querySelector('#memory tr.fact[data-id="`+alice[1].ID+`"] .fact-text').innerText`); text != alice[1].Text {
		t.Errorf("the fact's text shows as %q, want %q", text, alice[1].Text)
	}
	browsertest.Screenshot(t, d.tab, d.shots, "memory.png")

	d.do(t, chromedp.Click(chromedp.CSS(`#memory tr.fact[data-id="`+alice[0].ID+`"] button.forget`)))
	d.until(t, "the forgotten fact gone from the page", rows+` === "`+alice[1].ID+`"`)
	left, err := store.List(ctx, "alice")
	if err != nil || len(left) != 1 || left[0].ID != alice[1].ID {
		t.Errorf("alice's facts after Forget: %+v, %v; want only %s", left, err, alice[1].ID)
	}
	if bob, err := store.List(ctx, "bob"); err != nil || len(bob) != 1 {
		t.Errorf("bob's facts after alice's Forget: %+v, %v", bob, err)
	}
	if pwned, err := chromedp.Run(d.tab, chromedp.Evaluate[bool](`!!window.pwned`)); err != nil || pwned {
		t.Errorf("a fact's text ran as HTML (window.pwned %v, %v)", pwned, err)
	}
}
