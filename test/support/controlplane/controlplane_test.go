package controlplane

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// One control plane, started without the controller manager, walked
// through every capability the tests rely on.
func TestControlPlaneLifecycle(t *testing.T) {
	ctx := context.Background()
	cp, err := Start(ctx, Options{WithoutControllerManager: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	admin := client(t, cp.Config)

	t.Run("reports v1.37.2", func(t *testing.T) {
		v, err := admin.Discovery().ServerVersion()
		if err != nil || v.GitVersion != "v1.37.2" {
			t.Fatalf("server version %v, %v; want v1.37.2 (version ldflags)", v, err)
		}
	})

	t.Run("minted users have only what RBAC grants", func(t *testing.T) {
		cfg, kubeconfig, err := cp.MintUser("alice", "team-a")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(kubeconfig); err != nil {
			t.Fatal(err)
		}
		_, err = client(t, cfg).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "alice"`) {
			t.Fatalf("alice listing namespaces: %v, want forbidden for user alice", err)
		}
	})

	t.Run("no namespace controller: deletion waits", func(t *testing.T) {
		mustCreateAndDelete(t, admin, "waits")
		time.Sleep(6 * time.Second) // the controller would act after 5 s
		ns, err := admin.CoreV1().Namespaces().Get(ctx, "waits", metav1.GetOptions{})
		if err != nil || ns.Status.Phase != v1.NamespaceTerminating || len(ns.Status.Conditions) != 0 {
			t.Fatalf("namespace without controller: %v %+v", err, ns.Status)
		}
	})

	t.Run("starting the controller manager finishes the deletion", func(t *testing.T) {
		if err := cp.StartControllerManager(); err != nil {
			t.Fatal(err)
		}
		if !cp.ControllerManagerRunning() {
			t.Fatal("controller manager not running")
		}
		waitGone(t, admin, "waits")
		cp.StopControllerManager()
		if cp.ControllerManagerRunning() {
			t.Fatal("controller manager still running after stop")
		}
	})

	t.Run("kube-apiserver restarts on the same data", func(t *testing.T) {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cp.StopAPIServer()
		if _, err := admin.CoreV1().Namespaces().Get(ctx, "kept", metav1.GetOptions{}); err == nil {
			t.Fatal("API answered while kube-apiserver was stopped")
		}
		if err := cp.StartAPIServer(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.CoreV1().Namespaces().Get(ctx, "kept", metav1.GetOptions{}); err != nil {
			t.Fatalf("after restart: %v", err)
		}
	})

	t.Run("etcd restarts on the same data", func(t *testing.T) {
		cp.StopEtcd()
		short, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		// A quorum read needs etcd: it fails or times out.
		if _, err := admin.CoreV1().Namespaces().Get(short, "kept", metav1.GetOptions{}); err == nil {
			t.Fatal("API answered a read while etcd was stopped")
		}
		if err := cp.StartEtcd(); err != nil {
			t.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := admin.CoreV1().Namespaces().Get(ctx, "kept", metav1.GetOptions{})
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("namespace not readable after etcd restart: %v", err)
		}
	})

	t.Run("stop removes everything", func(t *testing.T) {
		cp.Stop()
		if _, err := os.Stat(cp.Dir); !os.IsNotExist(err) {
			t.Fatalf("dir %s still there: %v", cp.Dir, err)
		}
		if cp.etcd.running() || cp.apiserver.running() {
			t.Fatal("processes still running after Stop")
		}
	})
}

func client(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustCreateAndDelete(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitGone(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("namespace %s not deleted: %v", name, err)
	}
}
