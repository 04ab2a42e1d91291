package security

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// RevokeSubject is where the process running a secure server takes
// revocations (RevokeRequest) and answers each with a RevokeReply. Only
// admin may publish it: no other identity is granted a `$AGENTMESH`
// subject.
const RevokeSubject = "$AGENTMESH.ACCOUNT.REVOKE"

// issuedFile is the ledger of issued users: one line per credentials
// file, "<user public key> <identity> <time issued>". NATS revokes users by
// public key, and every credentials file has a key of its own, so revoking
// an identity means revoking every key the ledger holds for it.
const issuedFile = "issued"

// recordIssued appends the user key pub of identity user to the ledger.
// One write of one line: processes issuing at once do not mix lines.
func (a *Authority) recordIssued(pub, user string) error { return recordIssuedIn(a.dir, pub, user) }

// recordIssuedIn appends to the ledger under dir: the authority's, or a
// tenant's (TenantDir).
func recordIssuedIn(dir, pub, user string) error {
	path := filepath.Join(dir, issuedFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("security: the ledger of issued users: %w", err)
	}
	_, err = fmt.Fprintf(f, "%s %s %s\n", pub, user, time.Now().UTC().Format(time.RFC3339))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("security: the ledger of issued users (%s): %w", path, err)
	}
	return nil
}

// IssuedKeys returns the public keys of the users issued for identity user
// (e.g. "client-alice"), oldest first, from the ledger.
func (a *Authority) IssuedKeys(user string) ([]string, error) { return issuedKeysIn(a.dir, user) }

func issuedKeysIn(dir, user string) ([]string, error) {
	var keys []string
	err := readLedger(dir, func(key, u string) {
		if u == user {
			keys = append(keys, key)
		}
	})
	if err != nil {
		return nil, err
	}
	return keys, nil
}

// RevokeRequest asks the server's process to revoke an identity: every
// credentials file of it issued until the server applies the request
// stops working, and its connections are closed.
type RevokeRequest struct {
	Tenant string   `json:"tenant,omitempty"` // the identity's tenant (SetTenants); none for the mesh account's
	User   string   `json:"user"`             // the identity, e.g. client-alice or agent-TextAgent
	Keys   []string `json:"keys,omitempty"`   // its users' public keys (IssuedKeys); the server adds those connected now
}

// RevokeReply is the outcome of a RevokeRequest.
type RevokeReply struct {
	User  string               `json:"user"`
	Keys  int                  `json:"keys"`            // user keys revoked
	At    int64                `json:"at"`              // unix seconds: credentials issued at or before it are refused
	Error *schemas.ResultError `json:"error,omitempty"` // invalid_request, forbidden, not_found or internal
}

// Revoker answers RevokeRequests for the server it runs in.
type Revoker struct {
	Authority *Authority
	Server    *server.Server
	// Revoked, when set, is told of each identity of the mesh account
	// revoked (after the server applied it), e.g. to remove a
	// credentials file it kept.
	Revoked func(user string)
	// TenantRevoked, when set, is told of each identity of a tenant
	// revoked.
	TenantRevoked func(tenant, user string)
	// Errorf, when set, reports a reply that could not be sent (default:
	// standard error).
	Errorf func(format string, args ...any)
}

// Serve answers RevokeRequests on nc, an admin connection, until the
// subscription it returns is unsubscribed or nc closes. In a cluster each
// node's process answers: each applies the revocation to its own server
// and store, and the requester reads the first answer.
func (r *Revoker) Serve(nc *nats.Conn) (*nats.Subscription, error) {
	return nc.Subscribe(RevokeSubject, func(msg *nats.Msg) {
		reply := r.revoke(msg.Data)
		data, err := json.Marshal(reply)
		if err == nil {
			err = msg.Respond(data)
		}
		if err == nil || errors.Is(err, nats.ErrMsgNoReply) {
			return
		}
		if r.Errorf != nil {
			r.Errorf("answering a revocation of %q: %v", reply.User, err)
		} else {
			fmt.Fprintf(os.Stderr, "agentmesh: answering a revocation of %q: %v\n", reply.User, err)
		}
	})
}

// DecodeRevokeRequest reads a RevokeRequest, checking that it names an
// identity (bus.ParseUser) and user public keys only.
func DecodeRevokeRequest(data []byte) (RevokeRequest, error) {
	var req RevokeRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return RevokeRequest{}, fmt.Errorf("a revocation is JSON {\"user\": ..., \"keys\": [...]}: %w", err)
	}
	id, err := bus.ParseUser(req.User)
	if err != nil {
		return req, err
	}
	req.User = id.User()
	if req.Tenant != "" {
		if err := validateTenantName(req.Tenant); err != nil {
			return req, err
		}
	}
	for _, k := range req.Keys {
		if !nkeys.IsValidPublicUserKey(k) {
			return req, fmt.Errorf("%q is no user public key (U...)", k)
		}
	}
	return req, nil
}

// revoke applies one request and says how it ended.
func (r *Revoker) revoke(data []byte) RevokeReply {
	req, err := DecodeRevokeRequest(data)
	fail := func(code, format string, args ...any) RevokeReply {
		return RevokeReply{User: req.User, Error: &schemas.ResultError{Code: code, Message: fmt.Sprintf(format, args...)}}
	}
	if err != nil {
		return fail(schemas.CodeInvalidRequest, "%v", err)
	}
	if req.User == (bus.Identity{Role: bus.RoleAdmin}).User() {
		if req.Tenant != "" {
			return fail(schemas.CodeForbidden, "tenant %s's admin cannot be revoked: the server provisions the tenant as admin; restart without --tenant %s to withdraw the whole tenant", req.Tenant, req.Tenant)
		}
		return fail(schemas.CodeForbidden, "admin cannot be revoked: the server's own processes run as admin; to withdraw every credential remove %s and restart", filepath.Join(r.Authority.dir, "account-signing.nk"))
	}
	account, ledger := r.Authority.accountPub, filepath.Join(r.Authority.dir, issuedFile)
	if req.Tenant != "" {
		pub, ok := r.Authority.tenantPub(req.Tenant)
		if !ok {
			return fail(schemas.CodeNotFound, "tenant %q is not one of this server's: it runs with --tenant %s", req.Tenant, strings.Join(r.Authority.TenantNames(), ", --tenant "))
		}
		account, ledger = pub, filepath.Join(r.Authority.TenantDir(req.Tenant), issuedFile)
	}
	keys := map[string]bool{}
	for _, k := range req.Keys {
		keys[k] = true
	}
	connected, err := r.connected(account, req.User)
	if err != nil {
		return fail(schemas.CodeInternal, "listing the connections of %s: %v", req.User, err)
	}
	for _, k := range connected {
		keys[k] = true
	}
	if len(keys) == 0 {
		return fail(schemas.CodeNotFound, "no credentials of %s to revoke: the ledger of this store holds none (%s) and none is connected", req.User, ledger)
	}
	at := time.Now()
	revoke := func(ac *jwt.AccountClaims) {
		for k := range keys {
			ac.RevokeAt(k, at)
		}
	}
	if req.Tenant != "" {
		err = r.Authority.reviseTenant(r.Server, req.Tenant, revoke)
	} else {
		err = r.Authority.ReviseAccount(r.Server, revoke)
	}
	if err != nil {
		return fail(schemas.CodeInternal, "revoking %s: %v", req.User, err)
	}
	switch {
	case req.Tenant != "" && r.TenantRevoked != nil:
		r.TenantRevoked(req.Tenant, req.User)
	case req.Tenant == "" && r.Revoked != nil:
		r.Revoked(req.User)
	}
	return RevokeReply{User: req.User, Keys: len(keys), At: at.Unix()}
}

// connected returns the user keys of the connections of identity user to
// account now, which the ledger may not hold (credentials issued
// elsewhere or before the ledger was kept).
func (r *Revoker) connected(account, user string) ([]string, error) {
	var keys []string
	for offset := 0; ; {
		cz, err := r.Server.Connz(&server.ConnzOptions{Username: true, Account: account, Offset: offset, Limit: 1024})
		if err != nil {
			return nil, err
		}
		for _, c := range cz.Conns {
			if uc, err := jwt.DecodeUserClaims(c.JWT); err == nil && uc.Name == user {
				keys = append(keys, uc.Subject)
			}
		}
		offset += len(cz.Conns)
		if len(cz.Conns) == 0 || offset >= cz.Total {
			return keys, nil
		}
	}
}

// Revoke asks the process running the secure server behind nc (an admin
// connection) to revoke identity user, with the keys the ledger of a
// holds for it, and waits for its answer.
func (a *Authority) Revoke(ctx context.Context, nc *nats.Conn, user string) (RevokeReply, error) {
	return a.revoke(ctx, nc, "", a.dir, user)
}

// RevokeTenant is Revoke for identity user of tenant, with the keys of
// the tenant's ledger (TenantCreds records them). nc is the mesh
// account's admin connection, as for Revoke: a tenant's identities cannot
// revoke.
func (a *Authority) RevokeTenant(ctx context.Context, nc *nats.Conn, tenant, user string) (RevokeReply, error) {
	if err := validateTenantName(tenant); err != nil {
		return RevokeReply{}, err
	}
	return a.revoke(ctx, nc, tenant, a.TenantDir(tenant), user)
}

func (a *Authority) revoke(ctx context.Context, nc *nats.Conn, tenant, ledger, user string) (RevokeReply, error) {
	keys, err := issuedKeysIn(ledger, user)
	if err != nil {
		return RevokeReply{}, err
	}
	data, err := json.Marshal(RevokeRequest{Tenant: tenant, User: user, Keys: keys})
	if err != nil {
		return RevokeReply{}, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	msg, err := nc.RequestWithContext(ctx, RevokeSubject, data)
	if errors.Is(err, nats.ErrNoResponders) {
		return RevokeReply{}, fmt.Errorf("no process of a secure server answers on %s at %s: revocations are applied by 'agentmesh server --secure' or 'agentmesh up --secure' (this version or later); is one running there?", RevokeSubject, nc.ConnectedUrlRedacted())
	}
	if err != nil {
		return RevokeReply{}, fmt.Errorf("revoking %s: %w", user, err)
	}
	var reply RevokeReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return RevokeReply{}, fmt.Errorf("revoking %s: the server's answer does not decode: %w", user, err)
	}
	if reply.Error != nil {
		return reply, reply.Error
	}
	return reply, nil
}
