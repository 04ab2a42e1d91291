package schemas

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
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
	mac := hmac.New(sha256.New, []byte(nonce))
	mac.Write([]byte(base))
	return base + "-" + tagEncoding.EncodeToString(mac.Sum(nil))[:tagLen]
}
