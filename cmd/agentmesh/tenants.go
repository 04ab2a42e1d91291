package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/security"
)

// tenantFlags are the server's flags about tenants (docs/security.md,
// "Tenants"): accounts of their own beside the mesh account.
type tenantFlags struct {
	specs []string // NAME[:quota=value,...]
	share []string // agents shared with the tenants, or "*"
}

func (f *tenantFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.specs, "tenant", nil, "with --secure: a tenant, a NATS account of its own holding a whole mesh under its own quotas, as NAME or NAME:store=20GiB,memory=1GiB,streams=50,consumers=500,connections=100 (repeatable); issue its credentials with 'agentmesh creds --tenant NAME ROLE [NAME]'")
	fs.StringArrayVar(&f.share, "share", nil, "with --tenant: an agent of the mesh account whose direct calls (mesh.call.AGENT) every tenant may make, or '*' for every agent (repeatable)")
}

// tenantQuotaKeys are the quota names of a --tenant spec.
const tenantQuotaKeys = "store, memory, streams, consumers, connections"

// parseTenant reads NAME[:key=value,...].
func parseTenant(spec string) (security.Tenant, error) {
	name, opts, _ := strings.Cut(spec, ":")
	t := security.Tenant{Name: name}
	var errs []error
	for opt := range strings.SplitSeq(opts, ",") {
		if opt == "" {
			continue
		}
		key, value, ok := strings.Cut(opt, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("--tenant %s: %q has no value: write quota=value, e.g. store=20GiB", spec, opt))
			continue
		}
		var err error
		switch key {
		case "store", "memory":
			var b envBytes
			if err = b.Set(value); err == nil {
				if key == "store" {
					t.Quotas.Store = b.v
				} else {
					t.Quotas.Memory = b.v
				}
			}
		case "streams", "consumers", "connections":
			var n int64
			if n, err = strconv.ParseInt(value, 10, 64); err != nil || n < 0 {
				err = fmt.Errorf("%q is not a count of zero (no limit) or more", value)
			}
			switch key {
			case "streams":
				t.Quotas.Streams = n
			case "consumers":
				t.Quotas.Consumers = n
			default:
				t.Quotas.Connections = n
			}
		default:
			err = fmt.Errorf("unknown quota %q: use %s, e.g. %s:store=20GiB,streams=50", key, tenantQuotaKeys, name)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("--tenant %s: %s: %w", spec, key, err))
		}
	}
	return t, errors.Join(errs...)
}

// setTenants signs the tenants' accounts into the authority before the
// server starts; nothing when none is given.
func (a *app) setTenants(sec *security.Server, f tenantFlags) ([]security.Tenant, error) {
	if sec == nil {
		if len(f.specs) > 0 || len(f.share) > 0 {
			return nil, usagef("--tenant and --share are accounts of a secure server: add --secure")
		}
		return nil, nil
	}
	var tenants []security.Tenant
	var errs []error
	for _, spec := range f.specs {
		t, err := parseTenant(spec)
		if err != nil {
			errs = append(errs, err)
		}
		tenants = append(tenants, t)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, usageError{err}
	}
	names, err := bus.NewNames(a.prefix)
	if err != nil {
		return nil, err
	}
	if err := sec.Authority.SetTenants(names, f.share, tenants...); err != nil {
		return nil, usageError{err}
	}
	return tenants, nil
}

// provisionTenant provisions tenant's mesh in its account, as its admin,
// whose credentials the server keeps in TENANT_DIR/creds/admin.creds.
func (a *app) provisionTenant(ctx context.Context, sec *security.Server, tenant string) error {
	dir := filepath.Join(sec.Authority.TenantDir(tenant), "creds")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	admin := filepath.Join(dir, "admin.creds")
	if _, err := os.Stat(admin); errors.Is(err, fs.ErrNotExist) {
		names, err := bus.NewNames(a.prefix)
		if err != nil {
			return err
		}
		creds, err := sec.Authority.TenantCreds(tenant, bus.Identity{Role: bus.RoleAdmin}, names)
		if err != nil {
			return err
		}
		if err := os.WriteFile(admin, creds, 0o600); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	saved := a.creds
	a.creds = admin
	defer func() { a.creds = saved }()
	m, err := a.connect(ctx, "agentmesh server (tenant "+tenant+")")
	if err != nil {
		return fmt.Errorf("tenant %s: %w", tenant, err)
	}
	defer m.Close()
	clients, err := sec.Authority.TenantIssuedClients(tenant)
	if err != nil {
		return err
	}
	return provisionClientFiles(ctx, m, clients) // the files buckets of its clients, in its account
}
