package security

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/agentmesh/agentmesh/bus"
)

// Dir is the directory under a server's store directory that holds what
// the secure mode generates: keys, certificates.
const Dir = "secure"

// Authority holds the keys of a secure mesh: the operator, the mesh
// account and its signing key, and the system account. Build it with
// LoadOrCreate.
type Authority struct {
	dir                             string
	mu                              sync.Mutex // serializes ReviseAccount; guards accountJWT
	operator, account, signer, sys  nkeys.KeyPair
	operatorJWT, accountJWT, sysJWT string
	operatorPub, accountPub, sysPub string
	tenants                         map[string]*tenantAccount // SetTenants'; guarded by mu
}

// key files under the authority's directory, one seed each.
var keyFiles = []struct {
	file   string
	create func() (nkeys.KeyPair, error)
}{
	{"operator.nk", nkeys.CreateOperator},
	{"account.nk", nkeys.CreateAccount},
	{"account-signing.nk", nkeys.CreateAccount},
	{"system.nk", nkeys.CreateAccount},
}

// LoadOrCreate reads the keys under dir, making the ones that are missing
// (and dir itself, 0700). Seeds are written 0600 and reused after, so the
// credentials issued once stay valid across restarts.
func LoadOrCreate(dir string) (*Authority, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("security: key directory: %w", err)
	}
	kps := make([]nkeys.KeyPair, len(keyFiles))
	for i, kf := range keyFiles {
		kp, err := loadOrCreateKey(filepath.Join(dir, kf.file), kf.create)
		if err != nil {
			return nil, err
		}
		kps[i] = kp
	}
	a := &Authority{dir: dir, operator: kps[0], account: kps[1], signer: kps[2], sys: kps[3]}
	if err := a.sign(); err != nil {
		return nil, err
	}
	return a, nil
}

// Load reads the keys under dir, which a secure server made; it makes
// nothing, so `agentmesh creds` pointed at the wrong directory says so.
func Load(dir string) (*Authority, error) {
	if _, err := os.Stat(filepath.Join(dir, keyFiles[0].file)); err != nil {
		return nil, fmt.Errorf("security: no keys in %s (%v): start `agentmesh server --secure` with that --store first, or pass its --store", dir, err)
	}
	return LoadOrCreate(dir)
}

func loadOrCreateKey(path string, create func() (nkeys.KeyPair, error)) (nkeys.KeyPair, error) {
	seed, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		kp, err := create()
		if err != nil {
			return nil, err
		}
		if seed, err = kp.Seed(); err != nil {
			return nil, err
		}
		if err := writeSecret(path, seed); err != nil {
			return nil, err
		}
		return kp, nil
	}
	if err != nil {
		return nil, fmt.Errorf("security: reading %s: %w", path, err)
	}
	kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(seed))))
	if err != nil {
		return nil, fmt.Errorf("security: %s holds no nkey seed (%v): remove it to make a new one (every credentials file issued before stops working)", path, err)
	}
	return kp, nil
}

// writeSecret writes data to path, readable by its owner only; an existing
// file is never overwritten.
func writeSecret(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("security: writing %s: %w", path, err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("security: writing %s: %w", path, err)
	}
	return nil
}

// sign issues the operator JWT (self-signed) and the account JWTs (signed
// by the operator): the mesh account with JetStream and its signing key,
// and the system account.
func (a *Authority) sign() error {
	var err error
	if a.operatorPub, err = a.operator.PublicKey(); err != nil {
		return err
	}
	if a.accountPub, err = a.account.PublicKey(); err != nil {
		return err
	}
	if a.sysPub, err = a.sys.PublicKey(); err != nil {
		return err
	}
	signerPub, err := a.signer.PublicKey()
	if err != nil {
		return err
	}
	oc := jwt.NewOperatorClaims(a.operatorPub)
	oc.Name = "agentmesh"
	oc.SystemAccount = a.sysPub
	if a.operatorJWT, err = oc.Encode(a.operator); err != nil {
		return fmt.Errorf("security: operator JWT: %w", err)
	}
	if a.accountJWT, err = a.loadAccount(signerPub); err != nil {
		return err
	}
	sc := jwt.NewAccountClaims(a.sysPub)
	sc.Name = "SYS"
	if a.sysJWT, err = sc.Encode(a.operator); err != nil {
		return fmt.Errorf("security: system account JWT: %w", err)
	}
	return nil
}

// Dir returns the directory the keys live in.
func (a *Authority) Dir() string { return a.dir }

// CredsOption changes the credentials Creds issues.
type CredsOption func(*jwt.UserClaims)

// WithExpiry makes the credentials stop working d after they are issued.
func WithExpiry(d time.Duration) CredsOption {
	return func(uc *jwt.UserClaims) { uc.Expires = time.Now().Add(d).Unix() }
}

// Creds returns a credentials file (jwt.FormatUserConfig: the user JWT and
// its nkey seed) for id under names, with the permissions of its role. A
// fresh user key is made each time: every call is a new user of the same
// identity, valid until it expires (WithExpiry) or the identity is revoked
// (RevokeRequest). Its public key is recorded in the authority's ledger of
// issued users, which revocations read.
func (a *Authority) Creds(id bus.Identity, names bus.Names, opts ...CredsOption) ([]byte, error) {
	return a.issue(a.accountPub, a.signer, a.recordIssued, id, names, opts...)
}

// issue signs a user JWT for id with signer, a signing key of account, and
// returns it with its new key as a credentials file; record, when not nil,
// is told the user's public key.
func (a *Authority) issue(account string, signer nkeys.KeyPair, record func(pub, user string) error, id bus.Identity, names bus.Names, opts ...CredsOption) ([]byte, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	ukp, err := nkeys.CreateUser()
	if err != nil {
		return nil, err
	}
	upub, err := ukp.PublicKey()
	if err != nil {
		return nil, err
	}
	uc := jwt.NewUserClaims(upub)
	uc.Name = id.User()
	uc.IssuerAccount = account
	uc.Tags.Add("agentmesh-role:"+string(id.Role), "agentmesh-prefix:"+strings.ToLower(names.Prefix()))
	uc.Permissions = Permissions(id, names)
	for _, o := range opts {
		o(uc)
	}
	token, err := uc.Encode(signer)
	if err != nil {
		return nil, fmt.Errorf("security: user JWT for %s: %w", id.User(), err)
	}
	seed, err := ukp.Seed()
	if err != nil {
		return nil, err
	}
	if record != nil {
		if err := record(upub, id.User()); err != nil {
			return nil, err
		}
	}
	return jwt.FormatUserConfig(token, seed)
}
