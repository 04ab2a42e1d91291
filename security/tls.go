package security

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// TLSFiles name the PEM files of a server's TLS: the CA clients trust, and
// the server's certificate and key.
type TLSFiles struct {
	CA, Cert, Key string
}

const certValidity = 5 * 365 * 24 * time.Hour

// LoadOrCreateTLS returns the CA and server certificate under dir, making
// them on first use: an ECDSA P-256 CA, and a server certificate it signs
// for 127.0.0.1, ::1, localhost, this host's name and hosts. Files that
// exist are reused as they are (keys 0600).
func LoadOrCreateTLS(dir string, hosts ...string) (TLSFiles, error) {
	f := TLSFiles{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "server.pem"), Key: filepath.Join(dir, "server-key.pem")}
	caKeyFile := filepath.Join(dir, "ca-key.pem")
	if exists(f.CA) && exists(f.Cert) && exists(f.Key) {
		return f, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return f, fmt.Errorf("security: TLS directory: %w", err)
	}
	for _, p := range []string{f.CA, f.Cert, f.Key, caKeyFile} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return f, fmt.Errorf("security: replacing an incomplete TLS set: %w", err)
		}
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return f, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "agentmesh CA", Organization: []string{"agentmesh"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return f, fmt.Errorf("security: CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return f, err
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return f, err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "agentmesh NATS server", Organization: []string{"agentmesh"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	addSANs(srvTmpl, hosts)
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		return f, fmt.Errorf("security: server certificate: %w", err)
	}
	caKeyDER, err := x509.MarshalECPrivateKey(caKey)
	if err != nil {
		return f, err
	}
	srvKeyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		return f, err
	}
	return f, writePEMs([]pemFile{
		{caKeyFile, "EC PRIVATE KEY", caKeyDER, true},
		{f.Key, "EC PRIVATE KEY", srvKeyDER, true},
		{f.CA, "CERTIFICATE", caDER, false},
		{f.Cert, "CERTIFICATE", srvDER, false},
	})
}

// pemFile is one PEM block to write; secret ones are the owner's only.
type pemFile struct {
	path, typ string
	der       []byte
	secret    bool
}

func writePEMs(files []pemFile) error {
	for _, w := range files {
		data := pem.EncodeToMemory(&pem.Block{Type: w.typ, Bytes: w.der})
		var err error
		if w.secret {
			err = writeSecret(w.path, data)
		} else {
			err = os.WriteFile(w.path, data, 0o644)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// addSANs names the server: loopback, localhost, this host and hosts
// (names or IP addresses).
func addSANs(c *x509.Certificate, hosts []string) {
	c.IPAddresses = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}
	c.DNSNames = []string{"localhost"}
	if h, err := os.Hostname(); err == nil && h != "" && h != "localhost" {
		c.DNSNames = append(c.DNSNames, h)
	}
	for _, h := range hosts {
		if h == "" || h == "0.0.0.0" || h == "::" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			c.IPAddresses = append(c.IPAddresses, ip)
		} else {
			c.DNSNames = append(c.DNSNames, h)
		}
	}
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
