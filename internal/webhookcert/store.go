package webhookcert

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// Source is the certificate served now: crypto/tls asks it at each
// handshake, so a renewal needs no restart.
type Source struct {
	cur atomic.Pointer[tls.Certificate]
}

// Set makes c the certificate served from now on.
func (s *Source) Set(c *tls.Certificate) { s.cur.Store(c) }

// GetCertificate is tls.Config's.
func (s *Source) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := s.cur.Load(); c != nil {
		return c, nil
	}
	return nil, errors.New("the guard has no serving certificate yet")
}

// The keys of the Secret: a kubernetes.io/tls Secret's, plus the CA's.
const (
	KeyCert   = v1.TLSCertKey       // tls.crt
	KeyKey    = v1.TLSPrivateKeyKey // tls.key
	KeyCA     = "ca.crt"
	KeyCAKey  = "ca.key"
	attempts  = 3
	fieldName = "ns-doctor-guard"
)

// SecretStore keeps the bundle in a Secret that every replica reads: the
// first to start creates it, whoever finds it due renews it, and a replica
// that loses the race (a conflict) reads the winner's.
type SecretStore struct {
	Secrets         typedcorev1.SecretsGetter
	Namespace, Name string
	// Hosts the serving certificate is for: the Service's DNS names.
	Hosts []string
	Life  Lifetimes
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

func (s *SecretStore) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Ensure returns the bundle of the Secret, after creating the Secret, or
// rotating its CA or reissuing its certificate when due. changed says
// whether this call wrote it.
func (s *SecretStore) Ensure(ctx context.Context) (b Bundle, changed bool, err error) {
	secrets := s.Secrets.Secrets(s.Namespace)
	for range attempts {
		sec, err := secrets.Get(ctx, s.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			b, err = Generate(s.Hosts, s.now(), s.Life)
			if err != nil {
				return Bundle{}, false, err
			}
			_, err = secrets.Create(ctx, s.secret(nil, b), metav1.CreateOptions{FieldManager: fieldName})
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			return b, err == nil, s.wrap("create", err)
		}
		if err != nil {
			return Bundle{}, false, s.wrap("get", err)
		}
		b, due, err := s.renewed(fromSecret(sec))
		if err != nil || !due {
			return b, false, err
		}
		_, err = secrets.Update(ctx, s.secret(sec, b), metav1.UpdateOptions{FieldManager: fieldName})
		if apierrors.IsConflict(err) {
			continue
		}
		return b, err == nil, s.wrap("update", err)
	}
	return Bundle{}, false, fmt.Errorf("secret %s/%s keeps changing under the guard: another writer?", s.Namespace, s.Name)
}

// renewed is the bundle as it should be now, and whether that differs
// from b. A bundle that cannot be read is replaced.
func (s *SecretStore) renewed(b Bundle) (Bundle, bool, error) {
	now := s.now()
	rotate, reissue, err := b.Due(s.Hosts, now)
	switch {
	case err != nil:
		b, err = Generate(s.Hosts, now, s.Life)
	case rotate:
		b, err = b.Rotate(s.Hosts, now, s.Life)
	case reissue:
		b, err = b.Reissue(s.Hosts, now, s.Life.Serving)
	default:
		return b, false, nil
	}
	return b, err == nil, err
}

func (s *SecretStore) wrap(verb string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("the guard's certificate: %s secret %s/%s: %w", verb, s.Namespace, s.Name, err)
}

func (s *SecretStore) secret(old *v1.Secret, b Bundle) *v1.Secret {
	sec := &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace,
			Labels: map[string]string{"app.kubernetes.io/name": "ns-doctor", "app.kubernetes.io/component": "guard"}},
		Type: v1.SecretTypeTLS,
	}
	if old != nil {
		sec = old.DeepCopy()
	}
	sec.Data = map[string][]byte{KeyCert: b.Cert, KeyKey: b.Key, KeyCA: b.CACerts, KeyCAKey: b.CAKey}
	return sec
}

func fromSecret(sec *v1.Secret) Bundle {
	return Bundle{CACerts: sec.Data[KeyCA], CAKey: sec.Data[KeyCAKey], Cert: sec.Data[KeyCert], Key: sec.Data[KeyKey]}
}

// Keeper serves the Secret's certificate and keeps its CAs in the
// webhook configuration's caBundle.
type Keeper struct {
	Store  *SecretStore
	Source *Source
	// OnCA writes the caBundle; it is called whenever the CA
	// certificates differ from the last ones it was given.
	OnCA func(context.Context, []byte) error

	lastCA []byte
}

// Sync ensures the Secret, writes the caBundle if its CAs changed, then
// serves its certificate. The caBundle goes first: kube-apiserver must
// trust a new CA before a certificate it signed is served.
func (k *Keeper) Sync(ctx context.Context) error {
	b, _, err := k.Store.Ensure(ctx)
	if err != nil {
		return err
	}
	if !bytes.Equal(b.CACerts, k.lastCA) {
		if err := k.OnCA(ctx, b.CACerts); err != nil {
			return err
		}
		k.lastCA = b.CACerts
	}
	c, err := b.TLS()
	if err != nil {
		return err
	}
	k.Source.Set(c)
	return nil
}

// Run syncs every interval until ctx ends (another replica may have
// renewed the Secret, or it may be due). A failed sync is reported to
// onErr and tried again at the next tick; the certificate served stays.
func (k *Keeper) Run(ctx context.Context, every time.Duration, onErr func(error)) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if err := k.Sync(ctx); err != nil && ctx.Err() == nil {
			onErr(err)
		}
	}
}

// Files reads a serving certificate another issuer keeps in dir
// (cert-manager's Secret, mounted): tls.crt and tls.key.
type Files struct{ Dir string }

// Load reads the certificate and its key.
func (f Files) Load() (*tls.Certificate, error) {
	c, err := tls.LoadX509KeyPair(filepath.Join(f.Dir, KeyCert), filepath.Join(f.Dir, KeyKey))
	if err != nil {
		return nil, fmt.Errorf("the guard's certificate in %s: %w", f.Dir, err)
	}
	return &c, nil
}

// Keep reloads the files every interval until ctx ends, when they
// changed (the kubelet updates a mounted Secret in place after
// cert-manager renews it).
func (f Files) Keep(ctx context.Context, every time.Duration, src *Source, onErr func(error)) {
	var last time.Time
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if st, err := os.Stat(filepath.Join(f.Dir, KeyCert)); err == nil && st.ModTime() != last {
			if c, err := f.Load(); err != nil {
				onErr(err)
			} else {
				src.Set(c)
				last = st.ModTime()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
