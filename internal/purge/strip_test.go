package purge

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/retry"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// An object changed between purge's read and its patch is never clobbered:
// the patch carries the resourceVersion, the server answers Conflict, and
// purge re-reads and retries, or gives up and says so.
func TestStripRetriesOnConflict(t *testing.T) {
	for _, tc := range []struct {
		name      string
		conflicts int
		// saved: the pass saved the object before deleting it, so the
		// first patch starts from the listed metadata, unread.
		saved   bool
		status  RowStatus
		changes int
		reads   int
	}{
		{"one concurrent change", 1, false, RowDone, 1, 2},
		{"keeps changing", retry.DefaultRetry.Steps, false, RowFailed, 0, retry.DefaultRetry.Steps},
		{"saved by the pass", 0, true, RowDone, 1, 0},
		{"saved by the pass, then changed", 1, true, RowDone, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, patches := fakePurger(t, tc.conflicts)
			bk, err := backup.New(t.TempDir(), "purge")
			if err != nil {
				t.Fatal(err)
			}
			if tc.saved {
				if err := bk.Save(widgets, widget()); err != nil {
					t.Fatal(err)
				}
			}
			run := newRun(p, &Report{Namespace: "ns", Mode: DryRunNone})
			w := newRealWriter(p.Clients, bk, run.rc, nil)
			loop := run.passLoop(prepared{w: w, tally: realTally{content: w.content}, real: true, backup: bk})
			r := run.report
			listed := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "w1", Namespace: "ns", ResourceVersion: "7",
				Finalizers: []string{"example.com/cleanup", "other.io/keep"}}}
			s := newStripper([]string{"example.com/*"}, false).stripOne(context.Background(), loop.actor(), widgets, listed)
			if s.Status != tc.status || len(r.Changes) != tc.changes {
				t.Fatalf("status %q, changes %v, failures %v", s.Status, r.Changes, r.Failures)
			}
			if *patches != min(tc.conflicts+1, retry.DefaultRetry.Steps) {
				t.Errorf("%d patches sent", *patches)
			}
			if got := reads(p.Clients.Dynamic.(*dynamicfake.FakeDynamicClient)); got != tc.reads {
				t.Errorf("%d reads of the object, want %d", got, tc.reads)
			}
			if tc.conflicts > 0 && !hasWarning(r, WarnConflict) {
				t.Errorf("conflict not reported: %v", r.Warnings)
			}
			if bk.Count() != 1 {
				t.Errorf("object not backed up before the patch: %d saved", bk.Count())
			}
		})
	}
}

// A patch from the pass's list that meets NotFound is not taken for the
// object's end: a webhook selecting a gone namespace's labels answers so
// (--orphans). The object is read; still there, the patch is sent again
// and its refusal reported.
func TestStripReadsAfterNotFoundFromTheList(t *testing.T) {
	p, patches := fakePurger(t, 0)
	refused := apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "ns")
	p.Clients.Metadata.(*metadatafake.FakeMetadataClient).PrependReactor("patch", "widgets", func(clienttesting.Action) (bool, runtime.Object, error) {
		*patches++
		return true, nil, refused
	})
	bk, err := backup.New(t.TempDir(), "purge")
	if err != nil {
		t.Fatal(err)
	}
	if err := bk.Save(widgets, widget()); err != nil {
		t.Fatal(err)
	}
	run := newRun(p, &Report{Namespace: "ns", Mode: DryRunNone})
	w := newRealWriter(p.Clients, bk, run.rc, nil)
	loop := run.passLoop(prepared{w: w, tally: realTally{content: w.content}, real: true, backup: bk})
	listed := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "w1", Namespace: "ns", ResourceVersion: "7",
		Finalizers: []string{"example.com/cleanup"}}}
	s := newStripper([]string{"example.com/*"}, false).stripOne(context.Background(), loop.actor(), widgets, listed)
	if s.Status != RowFailed || *patches != 2 || reads(p.Clients.Dynamic.(*dynamicfake.FakeDynamicClient)) != 1 {
		t.Errorf("status %q after %d patches and %d reads, want failed after 2 and 1", s.Status, *patches,
			reads(p.Clients.Dynamic.(*dynamicfake.FakeDynamicClient)))
	}
	if len(run.report.Failures) != 1 || run.report.Failures[0].Error != refused.Error() {
		t.Errorf("failures %+v, want the refusal", run.report.Failures)
	}
}

func reads(c *dynamicfake.FakeDynamicClient) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == "get" {
			n++
		}
	}
	return n
}

func widget() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1", "namespace": "ns", "uid": "u1", "resourceVersion": "7", "finalizers": []any{"example.com/cleanup", "other.io/keep"}},
	}}
}

func fakePurger(t *testing.T, conflicts int) (*Purger, *int) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	obj := widget()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{widgets: "WidgetList"}, obj)
	meta := metadatafake.NewSimpleMetadataClient(scheme, &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Widget"},
		ObjectMeta: metav1.ObjectMeta{Name: "w1", Namespace: "ns", ResourceVersion: "7", Finalizers: []string{"example.com/cleanup", "other.io/keep"}},
	})
	patches := 0
	meta.PrependReactor("patch", "widgets", func(clienttesting.Action) (bool, runtime.Object, error) {
		patches++
		if patches <= conflicts {
			return true, nil, apierrors.NewConflict(widgets.GroupResource(), "w1", nil)
		}
		return false, nil, nil
	})
	p := &Purger{Clients: &kube.Clients{Dynamic: dyn, Metadata: meta}, Opts: Options{Escalations: Asked{diagnose.FlagRemoveFinalizers: {"example.com/*"}}}}
	return p, &patches
}
