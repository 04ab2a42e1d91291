package security

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/agentmesh/agentmesh/bus"
)

// TenantsDir is the directory under the authority's that holds one
// directory per tenant, with its account's keys (docs/security.md,
// "Tenants").
const TenantsDir = "tenants"

// ShareAll, given to SetTenants as the one shared agent, shares every
// agent of the mesh account.
const ShareAll = "*"

// shareExport names the mesh account's exports SetTenants makes, so a
// later start replaces them and leaves any other export alone.
const shareExport = "agentmesh-share:"

// Tenant is one tenant of a secure server: a NATS account of its own,
// signed by the operator, holding a whole mesh (its streams, buckets,
// orchestrator, agents and clients) under its own quotas. Nothing of it is
// addressable from another account but what the mesh account exports.
type Tenant struct {
	Name   string
	Quotas Quotas
}

// maxTenantName bounds a tenant's name: it is a directory name and an
// account name.
const maxTenantName = 32

// Validate reports a bad name and every negative quota at once.
func (t Tenant) Validate() error {
	var errs []error
	if err := validateTenantName(t.Name); err != nil {
		errs = append(errs, err)
	}
	if err := t.Quotas.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("tenant %q: %w", t.Name, err))
	}
	return errors.Join(errs...)
}

func validateTenantName(name string) error {
	ok := name != "" && len(name) <= maxTenantName
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
	}
	if !ok {
		return fmt.Errorf("security: tenant name %q: use 1 to %d letters, digits, '-' or '_'", name, maxTenantName)
	}
	return nil
}

// tenantAccount is a tenant's account as the authority holds it: its keys
// and, once SetTenants signed it, its JWT.
type tenantAccount struct {
	account, signer nkeys.KeyPair
	pub             string
	jwt             string
}

// tenantKeys reads the keys of tenant name under the authority's
// directory, making them when create is set.
func (a *Authority) tenantKeys(name string, create bool) (*tenantAccount, error) {
	if err := validateTenantName(name); err != nil {
		return nil, err
	}
	dir := filepath.Join(a.dir, TenantsDir, name)
	if !create {
		if _, err := os.Stat(filepath.Join(dir, "account.nk")); err != nil {
			return nil, fmt.Errorf("security: no tenant %q in %s (%v): start the server with --tenant %s first", name, a.dir, err, name)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("security: tenant directory: %w", err)
	}
	acc, err := loadOrCreateKey(filepath.Join(dir, "account.nk"), nkeys.CreateAccount)
	if err != nil {
		return nil, err
	}
	signer, err := loadOrCreateKey(filepath.Join(dir, "account-signing.nk"), nkeys.CreateAccount)
	if err != nil {
		return nil, err
	}
	pub, err := acc.PublicKey()
	if err != nil {
		return nil, err
	}
	return &tenantAccount{account: acc, signer: signer, pub: pub}, nil
}

// TenantDir returns the directory of tenant name's keys (and of the
// credentials the server issues it).
func (a *Authority) TenantDir(name string) string { return filepath.Join(a.dir, TenantsDir, name) }

// SharedSubjects returns the subjects of the shared agents' direct-call
// endpoints (mesh.call.<agent>; mesh.call.* for ShareAll) under names.
func SharedSubjects(names bus.Names, share []string) ([]string, error) {
	var subjects []string
	for _, agent := range share {
		if agent == ShareAll {
			return []string{names.Prefix() + ".call.*"}, nil
		}
		subj, err := names.Call(agent)
		if err != nil {
			return nil, fmt.Errorf("security: shared agent %q: %w", agent, err)
		}
		if !slices.Contains(subjects, subj) {
			subjects = append(subjects, subj)
		}
	}
	return subjects, nil
}

// SetTenants makes tenants the accounts the server loads besides the mesh
// account (their keys under TenantDir, made on first use), each with its
// own JetStream and its quotas, and shares the agents of share with them:
// the mesh account exports their direct-call endpoints (mesh.call.<agent>,
// every agent's with ShareAll) as services, and each tenant account
// imports them under the same subject, so a tenant's client calls a shared
// agent as it calls its own. The mesh account's revision is stored
// (ReviseAccount); a start with no share withdraws the exports. Call it
// before the server starts: Configure loads what it signed.
func (a *Authority) SetTenants(names bus.Names, share []string, tenants ...Tenant) error {
	var errs []error
	seen := map[string]bool{}
	for _, t := range tenants {
		if err := t.Validate(); err != nil {
			errs = append(errs, err)
		}
		if seen[t.Name] {
			errs = append(errs, fmt.Errorf("security: tenant %q is given twice: give each tenant once, with all its quotas", t.Name))
		}
		seen[t.Name] = true
	}
	if len(share) > 0 && len(tenants) == 0 {
		errs = append(errs, errors.New("security: shared agents are shared with tenants: give --tenant too"))
	}
	subjects, err := SharedSubjects(names, share)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := a.exportShared(subjects); err != nil {
		return err
	}
	accounts := map[string]*tenantAccount{}
	for _, t := range tenants {
		ta, err := a.tenantKeys(t.Name, true)
		if err != nil {
			return err
		}
		if ta.jwt, err = a.tenantJWT(t, ta, subjects); err != nil {
			return err
		}
		accounts[t.Name] = ta
	}
	a.mu.Lock()
	a.tenants = accounts
	a.mu.Unlock()
	return nil
}

// exportShared makes the mesh account's share exports those of subjects,
// revising it only when they differ.
func (a *Authority) exportShared(subjects []string) error {
	ac, err := a.AccountClaims()
	if err != nil {
		return err
	}
	var have []string
	for _, e := range ac.Exports {
		if strings.HasPrefix(e.Name, shareExport) {
			have = append(have, string(e.Subject))
		}
	}
	if slices.Equal(have, subjects) {
		return nil
	}
	return a.ReviseAccount(nil, func(ac *jwt.AccountClaims) {
		ac.Exports = slices.DeleteFunc(ac.Exports, func(e *jwt.Export) bool { return strings.HasPrefix(e.Name, shareExport) })
		for _, s := range subjects {
			// Singleton: a direct call has one answer; the agent's
			// response permission allows that one reply.
			ac.Exports.Add(&jwt.Export{Name: shareExport + s, Subject: jwt.Subject(s), Type: jwt.Service, ResponseType: jwt.ResponseTypeSingleton})
		}
	})
}

// tenantJWT signs tenant t's account: JetStream and connections within its
// quotas, its signing key, and imports of the shared subjects from the
// mesh account.
func (a *Authority) tenantJWT(t Tenant, ta *tenantAccount, shared []string) (string, error) {
	signerPub, err := ta.signer.PublicKey()
	if err != nil {
		return "", err
	}
	ac := jwt.NewAccountClaims(ta.pub)
	ac.Name = "tenant-" + t.Name
	ac.SigningKeys.Add(signerPub)
	t.Quotas.apply(ac)
	for _, s := range shared {
		ac.Imports.Add(&jwt.Import{Name: shareExport + s, Subject: jwt.Subject(s), Account: a.accountPub, Type: jwt.Service})
	}
	// The revocations of earlier starts are kept; the rest is this start's.
	path := filepath.Join(a.TenantDir(t.Name), accountFile)
	if old, err := os.ReadFile(path); err == nil {
		oc, err := jwt.DecodeAccountClaims(string(old))
		if err == nil && (oc.Subject != ta.pub || oc.Issuer != a.operatorPub) {
			err = fmt.Errorf("it is account %s signed by %s", oc.Subject, oc.Issuer)
		}
		if err != nil {
			return "", fmt.Errorf("security: %s is not tenant %q's account JWT (%v): remove it to start the tenant's account afresh (its revocations are lost)", path, t.Name, err)
		}
		ac.Revocations = oc.Revocations
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("security: reading %s: %w", path, err)
	}
	var vr jwt.ValidationResults
	ac.Validate(&vr)
	if vr.IsBlocking(true) {
		return "", fmt.Errorf("security: tenant %q's account is not valid: %w", t.Name, errors.Join(vr.Errors()...))
	}
	token, err := ac.Encode(a.operator)
	if err != nil {
		return "", fmt.Errorf("security: tenant %q's account JWT: %w", t.Name, err)
	}
	return token, writeFileAtomic(path, []byte(token))
}

// reviseTenant changes tenant name's account as ReviseAccount does the
// mesh account's (revocations): signed, stored, applied to srv.
func (a *Authority) reviseTenant(srv *server.Server, name string, edit func(*jwt.AccountClaims)) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	ta, ok := a.tenants[name]
	if !ok {
		return fmt.Errorf("security: tenant %q is not one of this server's (--tenant)", name)
	}
	ac, err := jwt.DecodeAccountClaims(ta.jwt)
	if err != nil {
		return fmt.Errorf("security: tenant %q's account JWT in use: %w", name, err)
	}
	if ac.Revocations == nil {
		ac.Revocations = jwt.RevocationList{}
	}
	edit(ac)
	if ac.Subject != ta.pub {
		return fmt.Errorf("security: a revision may not change tenant %q's account", name)
	}
	token, err := ac.Encode(a.operator)
	if err != nil {
		return fmt.Errorf("security: tenant %q's account JWT: %w", name, err)
	}
	if err := writeFileAtomic(filepath.Join(a.TenantDir(name), accountFile), []byte(token)); err != nil {
		return err
	}
	ta.jwt = token
	if srv == nil {
		return nil
	}
	return applyAccount(srv, ta.pub, token)
}

// tenantPub returns the account public key of tenant name, if SetTenants
// made it one of this server's.
func (a *Authority) tenantPub(name string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ta, ok := a.tenants[name]
	if !ok {
		return "", false
	}
	return ta.pub, true
}

// TenantNames returns the names of the tenants SetTenants made, sorted.
func (a *Authority) TenantNames() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	names := make([]string, 0, len(a.tenants))
	for n := range a.tenants {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// TenantCreds returns a credentials file for identity id of tenant
// (made by SetTenants, on this start or an earlier one), as Creds does
// for the mesh account: the user JWT is issued by the tenant account's
// signing key, so it connects to the tenant's account and sees only the
// tenant's mesh. Its key is recorded in the tenant's ledger, which
// RevokeTenant reads.
func (a *Authority) TenantCreds(tenant string, id bus.Identity, names bus.Names, opts ...CredsOption) ([]byte, error) {
	ta, err := a.tenantKeys(tenant, false)
	if err != nil {
		return nil, err
	}
	opts = append([]CredsOption{func(uc *jwt.UserClaims) { uc.Tags.Add("agentmesh-tenant:" + strings.ToLower(tenant)) }}, opts...)
	dir := a.TenantDir(tenant)
	return a.issue(ta.pub, ta.signer, func(pub, user string) error { return recordIssuedIn(dir, pub, user) }, id, names, opts...)
}

// tenantJWTs returns the tenants' account JWTs by public key.
func (a *Authority) tenantJWTs() map[string]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := make(map[string]string, len(a.tenants))
	for _, ta := range a.tenants {
		m[ta.pub] = ta.jwt
	}
	return m
}
