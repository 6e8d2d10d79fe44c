package webhookcert

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/cert"
)

const host = "ns-doctor-guard.ns-doctor.svc"

// handshake serves b's certificate and dials it as kube-apiserver does:
// trusting caBundle, expecting serverName.
func handshake(t *testing.T, b Bundle, caBundle []byte, serverName string) error {
	t.Helper()
	src := &Source{}
	c, err := b.TLS()
	if err != nil {
		t.Fatal(err)
	}
	src.Set(c)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.TLS = &tls.Config{GetCertificate: src.GetCertificate}
	srv.StartTLS()
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caBundle)
	conn, err := tls.Dial("tcp", srv.Listener.Addr().String(), &tls.Config{RootCAs: pool, ServerName: serverName})
	if err == nil {
		_ = conn.Close()
	}
	return err
}

func TestGeneratedBundleServes(t *testing.T) {
	b, err := Generate([]string{host, "127.0.0.1"}, time.Now(), DefaultLifetimes)
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, b, b.CACerts, host); err != nil {
		t.Errorf("kube-apiserver's handshake: %v", err)
	}
	if err := handshake(t, b, b.CACerts, "other.svc"); err == nil {
		t.Error("a name the certificate is not for was accepted")
	}
	other, _ := Generate([]string{host}, time.Now(), DefaultLifetimes)
	if err := handshake(t, b, other.CACerts, host); err == nil {
		t.Error("another CA was trusted")
	}
	if rotate, reissue, err := b.Due([]string{host}, time.Now()); rotate || reissue || err != nil {
		t.Errorf("a new bundle is due: %v %v %v", rotate, reissue, err)
	}
	if _, reissue, _ := b.Due([]string{"another.svc"}, time.Now()); !reissue {
		t.Error("a certificate for other names is not reissued")
	}
	if _, reissue, _ := b.Due([]string{host}, time.Now().Add(ServingLifetime*3/4)); !reissue {
		t.Error("a certificate a quarter of its life from its end is not reissued")
	}
	if rotate, _, _ := b.Due([]string{host}, time.Now().Add(CALifetime*3/4)); !rotate {
		t.Error("a CA a quarter of its life from its end is not rotated")
	}
}

// A rotated CA stays trusted beside the new one: the caBundle holds both,
// so a certificate of either is accepted while replicas catch up.
func TestRotationKeepsTheOldCA(t *testing.T) {
	old, _ := Generate([]string{host}, time.Now().Add(-8*time.Hour), Lifetimes{CA: 9 * time.Hour, Serving: 9 * time.Hour})
	rotated, err := old.Rotate([]string{host}, time.Now(), DefaultLifetimes)
	if err != nil {
		t.Fatal(err)
	}
	cas, _ := cert.ParseCertsPEM(rotated.CACerts)
	if len(cas) != 2 {
		t.Fatalf("%d CAs after rotation, want the new and the old", len(cas))
	}
	if err := handshake(t, old, rotated.CACerts, host); err != nil {
		t.Errorf("the old CA's certificate under the new caBundle: %v", err)
	}
	if err := handshake(t, rotated, rotated.CACerts, host); err != nil {
		t.Errorf("the new certificate: %v", err)
	}
	if rotate, reissue, _ := rotated.Due([]string{host}, time.Now()); rotate || reissue {
		t.Error("a rotated bundle is due again")
	}
}

func TestSecretStore(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	now := time.Now()
	s := &SecretStore{Secrets: c.CoreV1(), Namespace: "ns-doctor", Name: "tls", Hosts: []string{host}, Life: Lifetimes{CA: 30 * time.Hour, Serving: 3 * time.Hour},
		Now: func() time.Time { return now }}
	first, changed, err := s.Ensure(ctx)
	if err != nil || !changed {
		t.Fatalf("creating: %v %v", changed, err)
	}
	again, changed, err := s.Ensure(ctx)
	if err != nil || changed || !again.Equal(first) {
		t.Errorf("a second replica: changed %v, err %v, same %v", changed, err, again.Equal(first))
	}
	now = now.Add(150 * time.Minute) // 30 of 180 minutes left
	renewed, changed, err := s.Ensure(ctx)
	if err != nil || !changed || string(renewed.CACerts) != string(first.CACerts) || string(renewed.Cert) == string(first.Cert) {
		t.Errorf("renewing the serving certificate: changed %v err %v", changed, err)
	}
	sec, _ := c.CoreV1().Secrets("ns-doctor").Get(ctx, "tls", metav1.GetOptions{})
	if string(sec.Data[KeyCert]) != string(renewed.Cert) || string(sec.Type) != "kubernetes.io/tls" {
		t.Errorf("the Secret holds %v", sec)
	}
	// A replica that loses the race reads the winner's.
	conflicts := 1
	c.PrependReactor("update", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(sec.GroupVersionKind().GroupVersion().WithResource("secrets").GroupResource(), "tls", nil)
		}
		return false, nil, nil
	})
	now = now.Add(170 * time.Minute)
	if _, changed, err := s.Ensure(ctx); err != nil || !changed {
		t.Errorf("after a conflict: changed %v err %v", changed, err)
	}
}

func TestKeeperWritesTheCABundleFirst(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	src := &Source{}
	var order []string
	k := &Keeper{Store: &SecretStore{Secrets: c.CoreV1(), Namespace: "ns-doctor", Name: "tls", Hosts: []string{host}, Life: DefaultLifetimes}, Source: src,
		OnCA: func(context.Context, []byte) error {
			if _, err := src.GetCertificate(nil); err == nil {
				order = append(order, "served before the caBundle")
			}
			order = append(order, "caBundle")
			return nil
		}}
	for range 2 {
		if err := k.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(order) != 1 || order[0] != "caBundle" {
		t.Errorf("%v, want the caBundle written once, before anything was served", order)
	}
	if _, err := src.GetCertificate(nil); err != nil {
		t.Error(err)
	}
}

// While the guard runs, Run renews what comes due (here the CA, a third
// of its life left) and keeps serving: the new CA goes into the caBundle
// beside the old, then its certificate is served. It also takes up what
// another replica wrote to the Secret.
func TestKeeperRunRenewsWhileServing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := fake.NewClientset()
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	life := Lifetimes{CA: 30 * time.Hour, Serving: 3 * time.Hour}
	src := &Source{}
	var mu sync.Mutex
	var bundles [][]byte
	k := &Keeper{Store: &SecretStore{Secrets: c.CoreV1(), Namespace: "ns-doctor", Name: "tls", Hosts: []string{host}, Life: life, Now: clock}, Source: src,
		OnCA: func(_ context.Context, ca []byte) error {
			mu.Lock()
			defer mu.Unlock()
			bundles = append(bundles, ca)
			return nil
		}}
	if err := k.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	first, _ := src.GetCertificate(nil)
	go k.Run(ctx, 10*time.Millisecond, func(err error) { t.Errorf("sync: %v", err) })

	now.Add(int64(21 * time.Hour)) // 9 of the CA's 30 hours left
	waitFor(t, "the CA rotated and its certificate served", func() bool {
		mu.Lock()
		defer mu.Unlock()
		served, _ := src.GetCertificate(nil)
		return len(bundles) == 2 && served != first
	})
	mu.Lock()
	cas, err := cert.ParseCertsPEM(bundles[1])
	mu.Unlock()
	if err != nil || len(cas) != 2 {
		t.Fatalf("the caBundle after rotation holds %d CAs (%v), want the new and the old", len(cas), err)
	}

	// Another replica renews the Secret: this one serves its certificate.
	other := &SecretStore{Secrets: c.CoreV1(), Namespace: "ns-doctor", Name: "tls", Hosts: []string{host}, Life: life,
		Now: func() time.Time { return clock().Add(170 * time.Minute) }}
	renewed, changed, err := other.Ensure(ctx)
	if err != nil || !changed {
		t.Fatalf("the other replica: %v %v", changed, err)
	}
	waitFor(t, "the other replica's certificate served", func() bool {
		served, _ := src.GetCertificate(nil)
		return served != nil && len(served.Certificate) > 0 && string(pemCert(served.Certificate[0])) == string(renewed.Cert)
	})
}

// With cert-manager's files, Keep serves the new certificate once the
// kubelet has updated the mounted Secret.
func TestFilesKeepReloads(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	write := func(b Bundle, at time.Time) {
		for name, data := range map[string][]byte{KeyCert: b.Cert, KeyKey: b.Key} {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, at, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	one, err := Generate([]string{host}, time.Now(), DefaultLifetimes)
	if err != nil {
		t.Fatal(err)
	}
	write(one, time.Now().Add(-time.Hour))
	src := &Source{}
	go Files{Dir: dir}.Keep(ctx, 10*time.Millisecond, src, func(err error) { t.Errorf("keep: %v", err) })
	served := func(b Bundle) func() bool {
		return func() bool {
			c, _ := src.GetCertificate(nil)
			return c != nil && string(pemCert(c.Certificate[0])) == string(b.Cert)
		}
	}
	waitFor(t, "the first certificate served", served(one))
	two, err := Generate([]string{host}, time.Now(), DefaultLifetimes)
	if err != nil {
		t.Fatal(err)
	}
	write(two, time.Now())
	waitFor(t, "the renewed certificate served", served(two))
}

// waitFor polls cond for up to ten seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not within 10s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
