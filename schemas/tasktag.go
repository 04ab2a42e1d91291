package schemas

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"hash"
	"sync"
)

// tagEncoding spells tags and nonces with lower-case letters and digits,
// which every task id and subject token may hold.
var tagEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// tagLen is the length of a task tag: 16 characters, 80 bits.
const tagLen = 16

// NewRunNonce returns a fresh random nonce for a run (128 bits, 26
// characters). The orchestrator keeps it in the run's spec, where only it
// and admin can read it; the run's task ids are tagged with it (TaskTag).
func NewRunNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail (Go 1.24+)
	return tagEncoding.EncodeToString(b[:])
}

// TaskTag returns base-<tag>: tag is the first 16 characters of the
// HMAC-SHA256 of base keyed with nonce, so it differs for every task of a
// run and one task id seen (in a progress event, say) tells nothing of the
// others. An empty nonce (a run stored before nonces) gives base itself.
func TaskTag(base, nonce string) string {
	if nonce == "" {
		return base
	}
	k := macs.get(nonce)
	k.mu.Lock()
	k.mac.Reset()
	k.mac.Write([]byte(base))
	var sum [sha256.Size]byte
	k.mac.Sum(sum[:0])
	k.mu.Unlock()
	var tag [(sha256.Size*8 + 4) / 5]byte
	tagEncoding.Encode(tag[:], sum[:])
	return base + "-" + string(tag[:tagLen])
}

// keyedMAC is an HMAC keyed with one run's nonce. Keying it costs as much
// as tagging a short id (two more blocks of SHA-256 and five
// allocations), and every step of a run tags its task ids, so the keyed
// state is kept and Reset between uses.
type keyedMAC struct {
	mu  sync.Mutex
	mac hash.Hash
}

// macCache holds the keyed MACs of the runs in hand, at most maxMACs; past
// that it starts again empty (a run whose MAC is dropped keys a new one).
type macCache struct {
	mu sync.Mutex
	m  map[string]*keyedMAC
}

const maxMACs = 4096

var macs macCache

func (c *macCache) get(nonce string) *keyedMAC {
	c.mu.Lock()
	defer c.mu.Unlock()
	if k, ok := c.m[nonce]; ok {
		return k
	}
	if c.m == nil || len(c.m) >= maxMACs {
		c.m = make(map[string]*keyedMAC)
	}
	k := &keyedMAC{mac: hmac.New(sha256.New, []byte(nonce))}
	c.m[nonce] = k
	return k
}
