package security

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/bus"
)

// IssuedClients returns the names of the clients the ledger holds
// credentials for, sorted, each once: the clients whose files buckets the
// server makes at start (bus.ProvisionClientFiles).
func (a *Authority) IssuedClients() ([]string, error) { return issuedClientsIn(a.dir) }

// TenantIssuedClients is IssuedClients for tenant's ledger: the clients
// of its account.
func (a *Authority) TenantIssuedClients(tenant string) ([]string, error) {
	return issuedClientsIn(a.TenantDir(tenant))
}

func issuedClientsIn(dir string) ([]string, error) {
	path := filepath.Join(dir, issuedFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("security: the ledger of issued users: %w", err)
	}
	defer f.Close()
	var clients []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		if id, err := bus.ParseUser(fields[1]); err == nil && id.Role == bus.RoleClient {
			clients = append(clients, id.Name)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("security: reading %s: %w", path, err)
	}
	slices.Sort(clients)
	return slices.Compact(clients), nil
}
