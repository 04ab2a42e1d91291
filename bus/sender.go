package bus

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// Headers of a signed task (docs/security.md, "Who sent a task"). On a
// secure mesh every agentmesh process signs the tasks it sends, and an
// agent answers only into the result subjects of the identity that signed.
const (
	// HeaderSender is the sender's user JWT, as the account signing key
	// issued it (the server trusts the same key).
	HeaderSender = "Agentmesh-Sender"
	// HeaderSignature is the Ed25519 signature, by the JWT's user key, of
	// the task's digest (TaskDigest), base64url without padding.
	HeaderSignature = "Agentmesh-Signature"
)

// ErrUnsigned is a task on a secure mesh whose sender cannot be told: no
// signature, a bad one, or a JWT the mesh's account did not issue.
var ErrUnsigned = errors.New("task not signed by an identity of this mesh")

// Credentials are the user JWT and key of one identity of a secure mesh,
// read from its credentials file: they sign the tasks it sends and check
// the senders of the tasks it takes. ConnectOptions.Connect keeps them
// with the connection (CredentialsOf).
type Credentials struct {
	id      Identity
	token   string
	kp      nkeys.KeyPair
	issuer  string // the key that signed the JWT: the account signing key
	account string

	mu      sync.Mutex
	senders map[string]sender // verified sender JWTs (at most maxSenders)
}

type sender struct {
	id  Identity
	key nkeys.KeyPair // public key only
}

// LoadCredentials reads a credentials file whose user is an agentmesh
// identity (bus.Identity: its JWT's name).
func LoadCredentials(path string) (*Credentials, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("credentials file (NATS_CREDS / --creds): %w", err)
	}
	token, err := jwt.ParseDecoratedJWT(raw)
	if err != nil {
		return nil, fmt.Errorf("credentials file %s: %w", path, err)
	}
	claims, err := jwt.DecodeUserClaims(token)
	if err != nil {
		return nil, fmt.Errorf("credentials file %s: the user JWT: %w", path, err)
	}
	id, err := ParseUser(claims.Name)
	if err != nil {
		return nil, err
	}
	kp, err := nkeys.ParseDecoratedNKey(raw)
	if err != nil {
		return nil, fmt.Errorf("credentials file %s: the user key: %w", path, err)
	}
	return &Credentials{id: id, token: token, kp: kp, issuer: claims.Issuer, account: claims.IssuerAccount,
		senders: map[string]sender{}}, nil
}

// Identity returns the identity the credentials are of.
func (c *Credentials) Identity() Identity { return c.id }

// Sign sets the sender headers of task message msg: the JWT and the
// signature of its digest. Sign it last: a header or byte changed after
// breaks the signature.
func (c *Credentials) Sign(msg *nats.Msg) error {
	sig, err := c.kp.Sign(TaskDigest(msg))
	if err != nil {
		return fmt.Errorf("signing the task as %s: %w", c.id.User(), err)
	}
	if msg.Header == nil {
		msg.Header = nats.Header{}
	}
	msg.Header.Set(HeaderSender, c.token)
	msg.Header.Set(HeaderSignature, base64.RawURLEncoding.EncodeToString(sig))
	return nil
}

// maxSenders bounds the cache of verified sender JWTs.
const maxSenders = 1024

// Sender returns the identity that signed task message msg. It is an
// error wrapping ErrUnsigned unless msg carries a JWT issued by the same
// account signing key as c's own, for the same account, and a valid
// signature of its digest by that JWT's user key.
func (c *Credentials) Sender(msg *nats.Msg) (Identity, error) {
	token := msg.Header.Get(HeaderSender)
	sig, err := base64.RawURLEncoding.DecodeString(msg.Header.Get(HeaderSignature))
	if token == "" || err != nil || len(sig) == 0 {
		return Identity{}, fmt.Errorf("%w: send it with agentmesh credentials (headers %s and %s)", ErrUnsigned, HeaderSender, HeaderSignature)
	}
	s, err := c.verifiedSender(token)
	if err != nil {
		return Identity{}, err
	}
	if err := s.key.Verify(TaskDigest(msg), sig); err != nil {
		return Identity{}, fmt.Errorf("%w: the signature of %s does not match the task", ErrUnsigned, s.id.User())
	}
	return s.id, nil
}

func (c *Credentials) verifiedSender(token string) (sender, error) {
	c.mu.Lock()
	s, ok := c.senders[token]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	claims, err := jwt.DecodeUserClaims(token) // checks the JWT's own signature
	if err != nil {
		return sender{}, fmt.Errorf("%w: the sender JWT: %v", ErrUnsigned, err)
	}
	vr := jwt.CreateValidationResults()
	claims.Validate(vr)
	if vr.IsBlocking(true) || claims.Issuer != c.issuer || claims.IssuerAccount != c.account {
		return sender{}, fmt.Errorf("%w: the sender JWT of %q was not issued by this mesh's account signing key, or has expired", ErrUnsigned, claims.Name)
	}
	id, err := ParseUser(claims.Name)
	if err != nil {
		return sender{}, fmt.Errorf("%w: %w", ErrUnsigned, err)
	}
	key, err := nkeys.FromPublicKey(claims.Subject)
	if err != nil {
		return sender{}, fmt.Errorf("%w: the sender JWT of %q: %v", ErrUnsigned, claims.Name, err)
	}
	s = sender{id: id, key: key}
	c.mu.Lock()
	if len(c.senders) >= maxSenders {
		clear(c.senders)
	}
	c.senders[token] = s
	c.mu.Unlock()
	return s, nil
}

// TaskDigest is what a task's signature covers: the SHA-256 of its
// subject, its CloudEvents headers (ce-*, every attribute and extension in
// binary mode) and Content-Type, sorted, and its data.
func TaskDigest(msg *nats.Msg) []byte {
	h := sha256.New()
	h.Write([]byte(msg.Subject))
	h.Write([]byte{0})
	keys := make([]string, 0, len(msg.Header))
	for k := range msg.Header {
		if strings.HasPrefix(strings.ToLower(k), headerPrefix) || k == "Content-Type" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{0})
		for _, v := range msg.Header[k] {
			h.Write([]byte(v))
			h.Write([]byte{0})
		}
	}
	h.Write([]byte{0})
	h.Write(msg.Data)
	return h.Sum(nil)
}

// credentials keeps the Credentials of each connection ConnectOptions made
// with an agentmesh identity's credentials file, until it closes.
var credentials sync.Map // *nats.Conn -> *Credentials

// CredentialsOf returns the credentials nc was connected with by
// ConnectOptions.Connect, or nil: a connection without an agentmesh
// identity (a plain mesh) neither signs nor checks senders.
func CredentialsOf(nc *nats.Conn) *Credentials {
	if nc == nil {
		return nil
	}
	c, _ := credentials.Load(nc)
	creds, _ := c.(*Credentials)
	return creds
}

// SignTask signs task message msg with the credentials of nc, if it has
// any (CredentialsOf); on a plain mesh it does nothing.
func SignTask(nc *nats.Conn, msg *nats.Msg) error {
	if c := CredentialsOf(nc); c != nil {
		return c.Sign(msg)
	}
	return nil
}

// MayPublish reports whether the credentials' permissions let them
// publish on subject: an allow entry matches it (with NATS wildcards) and
// no deny entry does. Credentials with no publish permissions (admin) may
// publish anywhere. A runtime asks before a request the server would
// refuse only by letting it time out.
func (c *Credentials) MayPublish(subject string) bool {
	claims, err := jwt.DecodeUserClaims(c.token)
	if err != nil {
		return false
	}
	pub := claims.Permissions.Pub
	for _, d := range pub.Deny {
		if subjectMatches(d, subject) {
			return false
		}
	}
	if len(pub.Allow) == 0 {
		return true
	}
	for _, a := range pub.Allow {
		if subjectMatches(a, subject) {
			return true
		}
	}
	return false
}

// subjectMatches reports whether subject matches pattern, whose tokens may
// be '*' (one token) or a last '>' (one or more).
func subjectMatches(pattern, subject string) bool {
	pt, st := strings.Split(pattern, "."), strings.Split(subject, ".")
	for i, p := range pt {
		switch {
		case p == ">":
			return i == len(pt)-1 && len(st) > i
		case i >= len(st):
			return false
		case p != "*" && p != st[i]:
			return false
		}
	}
	return len(pt) == len(st)
}
