// Package webhookcert keeps the serving certificate of ns-doctor's
// admission webhook (the guard): a CA of its own and a serving certificate
// it signs, generated with crypto/x509, kept in memory (out of the
// cluster), in a Secret of the guard's namespace (in the cluster, shared
// by the replicas and renewed before expiry, the way Kyverno and
// Gatekeeper keep theirs), or read from files another issuer writes
// (cert-manager). The webhook configuration's caBundle is the CA
// certificates of the Bundle; the guard writes it.
package webhookcert

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// Lifetimes of what Generate makes. A third of its life before it ends, a
// certificate is renewed (Due).
const (
	CALifetime      = 10 * 365 * 24 * time.Hour
	ServingLifetime = 365 * 24 * time.Hour
)

// Bundle is a CA and the serving certificate it signed, PEM-encoded as a
// kubernetes.io/tls Secret holds them. CACerts may hold more than one CA:
// the new one and the one it replaces, while certificates the old one
// signed may still be served.
type Bundle struct {
	CACerts []byte
	CAKey   []byte
	Cert    []byte
	Key     []byte
}

// Lifetimes say how long what Generate makes is valid.
type Lifetimes struct {
	CA, Serving time.Duration
}

// DefaultLifetimes are CALifetime and ServingLifetime.
var DefaultLifetimes = Lifetimes{CA: CALifetime, Serving: ServingLifetime}

// Generate makes a new CA and a serving certificate for hosts (DNS names
// or IP addresses), valid from now.
func Generate(hosts []string, now time.Time, life Lifetimes) (Bundle, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Bundle{}, fmt.Errorf("generating the guard's CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "ns-doctor guard CA", Organization: []string{"ns-doctor"}},
		NotBefore:             now.Add(-5 * time.Minute).UTC(),
		NotAfter:              now.Add(life.CA).UTC(),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := sign(tmpl, tmpl, caKey.Public(), caKey)
	if err != nil {
		return Bundle{}, fmt.Errorf("signing the guard's CA: %w", err)
	}
	caKeyPEM, err := keyutil.MarshalPrivateKeyToPEM(caKey)
	if err != nil {
		return Bundle{}, err
	}
	b := Bundle{CACerts: pemCert(caDER), CAKey: caKeyPEM}
	return b.Reissue(hosts, now, life.Serving)
}

// Reissue signs a new serving certificate for hosts with the bundle's
// newest CA, valid for life from now (never past that CA).
func (b Bundle) Reissue(hosts []string, now time.Time, life time.Duration) (Bundle, error) {
	ca, caKey, err := b.signer()
	if err != nil {
		return Bundle{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Bundle{}, fmt.Errorf("generating the guard's serving key: %w", err)
	}
	notAfter := now.Add(life)
	if notAfter.After(ca.NotAfter) {
		notAfter = ca.NotAfter
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: hosts[0]},
		NotBefore:   now.Add(-5 * time.Minute).UTC(),
		NotAfter:    notAfter.UTC(),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := sign(tmpl, ca, key.Public(), caKey)
	if err != nil {
		return Bundle{}, fmt.Errorf("signing the guard's serving certificate: %w", err)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return Bundle{}, err
	}
	b.Cert, b.Key = pemCert(der), keyPEM
	return b, nil
}

// Rotate replaces the CA with a new one, keeping the old one in CACerts
// beside it (the caBundle then trusts both while the old one's
// certificate may still be served), and signs a new serving certificate.
func (b Bundle) Rotate(hosts []string, now time.Time, life Lifetimes) (Bundle, error) {
	fresh, err := Generate(hosts, now, life)
	if err != nil {
		return Bundle{}, err
	}
	old, err := cert.ParseCertsPEM(b.CACerts)
	if err != nil {
		return fresh, nil // nothing worth keeping
	}
	var kept []*x509.Certificate
	for _, c := range old {
		if now.Before(c.NotAfter) {
			kept = append(kept, c)
		}
	}
	if len(kept) > 0 {
		// The newest first: signer() signs with the first.
		fresh.CACerts = append(fresh.CACerts, pemCerts(kept[:1])...)
	}
	return fresh, nil
}

// Due tells whether the bundle needs work at now, and which: a CA with a
// third of its life left is rotated; a serving certificate with a third
// of its life left, or not valid for hosts, or not signed by the newest
// CA, is reissued.
func (b Bundle) Due(hosts []string, now time.Time) (rotateCA, reissue bool, err error) {
	ca, _, err := b.signer()
	if err != nil {
		return false, false, err
	}
	if nearEnd(ca, now) {
		return true, true, nil
	}
	certs, err := cert.ParseCertsPEM(b.Cert)
	if err != nil {
		return false, true, nil
	}
	c := certs[0]
	if nearEnd(c, now) || c.CheckSignatureFrom(ca) != nil {
		return false, true, nil
	}
	for _, h := range hosts {
		if c.VerifyHostname(h) != nil {
			return false, true, nil
		}
	}
	return false, false, nil
}

// NotAfter is when the serving certificate ends.
func (b Bundle) NotAfter() (time.Time, error) {
	certs, err := cert.ParseCertsPEM(b.Cert)
	if err != nil {
		return time.Time{}, err
	}
	return certs[0].NotAfter, nil
}

// TLS is the serving certificate as crypto/tls serves it.
func (b Bundle) TLS() (*tls.Certificate, error) {
	c, err := tls.X509KeyPair(b.Cert, b.Key)
	if err != nil {
		return nil, fmt.Errorf("the guard's serving certificate: %w", err)
	}
	return &c, nil
}

// Equal tells whether two bundles hold the same certificates and keys.
func (b Bundle) Equal(o Bundle) bool {
	return bytes.Equal(b.CACerts, o.CACerts) && bytes.Equal(b.CAKey, o.CAKey) && bytes.Equal(b.Cert, o.Cert) && bytes.Equal(b.Key, o.Key)
}

// nearEnd: less than a third of the certificate's life is left.
func nearEnd(c *x509.Certificate, now time.Time) bool {
	life := c.NotAfter.Sub(c.NotBefore)
	return c.NotAfter.Sub(now) < life/3
}

// signer is the newest CA (the first in CACerts) and its key.
func (b Bundle) signer() (*x509.Certificate, crypto.Signer, error) {
	certs, err := cert.ParseCertsPEM(b.CACerts)
	if err != nil {
		return nil, nil, fmt.Errorf("the guard's CA certificate: %w", err)
	}
	key, err := keyutil.ParsePrivateKeyPEM(b.CAKey)
	if err != nil {
		return nil, nil, fmt.Errorf("the guard's CA key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, nil, errors.New("the guard's CA key cannot sign")
	}
	return certs[0], signer, nil
}

func sign(tmpl, parent *x509.Certificate, pub crypto.PublicKey, key crypto.Signer) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial.Add(serial, big.NewInt(1))
	return x509.CreateCertificate(rand.Reader, tmpl, parent, pub, key)
}

func pemCert(der []byte) []byte {
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil
	}
	return pemCerts([]*x509.Certificate{c})
}

func pemCerts(certs []*x509.Certificate) []byte {
	out, err := cert.EncodeCertificates(certs...)
	if err != nil {
		return nil
	}
	return out
}
