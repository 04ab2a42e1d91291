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
	var clients []string
	err := readLedger(dir, func(_, user string) {
		if id, err := bus.ParseUser(user); err == nil && id.Role == bus.RoleClient {
			clients = append(clients, id.Name)
		}
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(clients)
	return slices.Compact(clients), nil
}

// readLedger calls fn with the public key and the identity (e.g.
// "client-alice") of each user in dir's ledger of issued users, oldest
// first; a ledger not yet written holds none.
func readLedger(dir string, fn func(key, user string)) error {
	path := filepath.Join(dir, issuedFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("security: the ledger of issued users: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) >= 2 {
			fn(fields[0], fields[1])
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("security: reading %s: %w", path, err)
	}
	return nil
}
