package security

import (
	"fmt"
	"path/filepath"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
)

// Server is what a secure server needs: the authority whose operator it
// trusts, and its TLS files.
type Server struct {
	Authority *Authority
	TLS       TLSFiles
}

// Setup loads or makes the keys and, unless tls names files already, the
// CA and server certificate under storeDir/secure, for a server reachable
// as hosts (besides loopback and this host's name).
func Setup(storeDir string, tls TLSFiles, hosts ...string) (*Server, error) {
	dir := filepath.Join(storeDir, Dir)
	a, err := LoadOrCreate(dir)
	if err != nil {
		return nil, err
	}
	if tls.Cert == "" && tls.Key == "" {
		ca := tls.CA
		if tls, err = LoadOrCreateTLS(dir, hosts...); err != nil {
			return nil, err
		}
		if ca != "" {
			tls.CA = ca
		}
	} else if tls.Cert == "" || tls.Key == "" {
		return nil, fmt.Errorf("security: a server certificate needs both --tls-cert and --tls-key (got cert %q, key %q)", tls.Cert, tls.Key)
	}
	return &Server{Authority: a, TLS: tls}, nil
}

// MaxControlLine is the longest protocol line the secure server reads. A
// client's CONNECT carries its user JWT, and the JWT its permissions: an
// agent's name recurs in about twenty subjects, so an agent with a long
// name and a long prefix (64 and 32 bytes, the most bus allows) sends a
// CONNECT of about 7 KiB, past NATS's default of 4 KiB. The bound leaves
// room for permissions to come.
const MaxControlLine = 16 << 10

// Configure turns o into a secure server: clients authenticate with user
// JWTs issued under the authority's account or a tenant's (SetTenants) (a
// memory resolver preloaded with those accounts and the system account),
// and every connection is TLS.
func (s *Server) Configure(o *server.Options) error {
	a := s.Authority
	oc, err := jwt.DecodeOperatorClaims(a.operatorJWT)
	if err != nil {
		return err
	}
	a.mu.Lock()
	account := a.accountJWT
	a.mu.Unlock()
	res := &server.MemAccResolver{}
	accounts := a.tenantJWTs()
	accounts[a.accountPub], accounts[a.sysPub] = account, a.sysJWT
	for pub, token := range accounts {
		if err := res.Store(pub, token); err != nil {
			return err
		}
	}
	o.TrustedOperators = []*jwt.OperatorClaims{oc}
	o.AccountResolver = res
	o.SystemAccount = a.sysPub
	tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: s.TLS.Cert, KeyFile: s.TLS.Key})
	if err != nil {
		return fmt.Errorf("security: TLS of the server (%s, %s): %w", s.TLS.Cert, s.TLS.Key, err)
	}
	o.TLSConfig = tc
	o.TLS = true
	o.MaxControlLine = MaxControlLine
	o.TLSTimeout = 2
	return nil
}
