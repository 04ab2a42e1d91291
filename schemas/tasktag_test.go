package schemas

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
)

// TaskTag keeps keyed MACs between calls; each tag must still be the
// HMAC-SHA256 of the base under its own nonce, whichever goroutine asks and
// however many nonces came before (the cache starts again past maxMACs).
func TestTaskTagIsTheHMACOfItsNonce(t *testing.T) {
	want := func(base, nonce string) string {
		m := hmac.New(sha256.New, []byte(nonce))
		m.Write([]byte(base))
		return base + "-" + tagEncoding.EncodeToString(m.Sum(nil))[:tagLen]
	}
	if got := TaskTag("run-a-1", ""); got != "run-a-1" {
		t.Fatalf("no nonce: got %q, want the base itself", got)
	}
	nonces := make([]string, maxMACs+10)
	for i := range nonces {
		nonces[i] = NewRunNonce()
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i, n := range nonces {
				base := fmt.Sprintf("run%d-step%d-1", i%7, g)
				if got, w := TaskTag(base, n), want(base, n); got != w {
					errs <- fmt.Errorf("TaskTag(%q, nonce %d) = %q, want %q", base, i, got, w)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
