package security

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
)

// accountFile holds the mesh account's JWT once it has been revised, so a
// restart keeps its revocations, limits and mappings. Until then the
// account is signed afresh at each start.
const accountFile = "account.jwt"

// loadAccount returns the mesh account's JWT: the revised one under the
// authority's directory, or a new one (JetStream without limits, signerPub
// as its signing key). A stored JWT must be this operator's, for this
// account; its signing key is set to signerPub, so removing
// account-signing.nk still withdraws every credential at the next start.
func (a *Authority) loadAccount(signerPub string) (string, error) {
	path := filepath.Join(a.dir, accountFile)
	token, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		ac := jwt.NewAccountClaims(a.accountPub)
		ac.Name = "agentmesh"
		ac.SigningKeys.Add(signerPub)
		ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: jwt.NoLimit, DiskStorage: jwt.NoLimit, Streams: jwt.NoLimit, Consumer: jwt.NoLimit}
		t, err := ac.Encode(a.operator)
		if err != nil {
			return "", fmt.Errorf("security: account JWT: %w", err)
		}
		return t, nil
	}
	if err != nil {
		return "", fmt.Errorf("security: reading %s: %w", path, err)
	}
	ac, err := jwt.DecodeAccountClaims(string(token))
	if err == nil && (ac.Subject != a.accountPub || ac.Issuer != a.operatorPub) {
		err = fmt.Errorf("it is account %s signed by %s, not account %s signed by operator %s", ac.Subject, ac.Issuer, a.accountPub, a.operatorPub)
	}
	if err != nil {
		return "", fmt.Errorf("security: %s is not the mesh account's JWT (%v): remove it to start the account afresh (its revocations and limits are lost)", path, err)
	}
	if len(ac.SigningKeys) == 1 && ac.SigningKeys.Contains(signerPub) {
		return string(token), nil
	}
	ac.SigningKeys = jwt.SigningKeys{}
	ac.SigningKeys.Add(signerPub)
	t, err := ac.Encode(a.operator)
	if err != nil {
		return "", fmt.Errorf("security: account JWT: %w", err)
	}
	return t, nil
}

// AccountClaims returns the mesh account's current claims (a copy).
func (a *Authority) AccountClaims() (*jwt.AccountClaims, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return jwt.DecodeAccountClaims(a.accountJWT)
}

// ReviseAccount changes the mesh account: edit gets the current claims
// and changes them (revocations, subject mappings, limits); the result is
// checked, signed with the operator's key, written under the authority's
// directory (a restart keeps it) and, when srv is not nil, applied to that
// running server at once. A server applying revocations disconnects the
// users they revoke; one applying limits refuses what exceeds them from
// then on. Revisions are serialized; each starts from the last. The maps
// of the claims edit gets (Mappings, Revocations) are never nil.
//
// srv must be the server configured with this authority (Configure): its
// account resolver is the memory one Configure made. With srv nil the
// revision is only stored, for the next start (or before the first).
func (a *Authority) ReviseAccount(srv *server.Server, edit func(*jwt.AccountClaims)) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	ac, err := jwt.DecodeAccountClaims(a.accountJWT)
	if err != nil {
		return fmt.Errorf("security: the account JWT in use: %w", err)
	}
	if ac.Mappings == nil {
		ac.Mappings = jwt.Mapping{}
	}
	if ac.Revocations == nil {
		ac.Revocations = jwt.RevocationList{}
	}
	signers := ac.SigningKeys
	edit(ac)
	if ac.Subject != a.accountPub {
		return fmt.Errorf("security: a revision may not change the account (%s to %s)", a.accountPub, ac.Subject)
	}
	for k := range signers {
		if !ac.SigningKeys.Contains(k) {
			return fmt.Errorf("security: a revision may not remove the account's signing key %s (remove %s and restart to withdraw every credential)", k, filepath.Join(a.dir, "account-signing.nk"))
		}
	}
	var vr jwt.ValidationResults
	ac.Validate(&vr)
	if vr.IsBlocking(true) {
		return fmt.Errorf("security: the revised account is not valid: %w", errors.Join(vr.Errors()...))
	}
	token, err := ac.Encode(a.operator)
	if err != nil {
		return fmt.Errorf("security: account JWT: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(a.dir, accountFile), []byte(token)); err != nil {
		return err
	}
	a.accountJWT = token
	if srv == nil {
		return nil
	}
	return a.apply(srv, token)
}

// apply hands the mesh account's JWT token to the running server.
func (a *Authority) apply(srv *server.Server, token string) error {
	return applyAccount(srv, a.accountPub, token)
}

// applyAccount hands the JWT token of account pub to the running server:
// its resolver keeps it (for lookups to come) and the loaded account
// takes its claims.
func applyAccount(srv *server.Server, pub, token string) error {
	res := srv.AccountResolver()
	if res == nil {
		return errors.New("security: the server has no account resolver: it does not run in the secure mode")
	}
	if err := res.Store(pub, token); err != nil {
		return fmt.Errorf("security: storing the revised account in the server: %w", err)
	}
	acc, err := srv.LookupAccount(pub)
	if err != nil {
		return fmt.Errorf("security: the server has no account %s (%v): is it configured with this authority?", pub, err)
	}
	ac, err := jwt.DecodeAccountClaims(token)
	if err != nil {
		return err
	}
	srv.UpdateAccountClaims(acc, ac)
	return nil
}

// writeFileAtomic replaces path with data (0600): a reader sees the old
// file or the new one, never a part.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("security: writing %s: %w", path, err)
	}
	_, err = f.Write(data)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("security: writing %s: %w", path, err)
	}
	return nil
}
