package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/finalizers"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// catalogued are finalizers of the catalogue's entries for issue #25, one
// per entry (a concrete name for the ACK glob), as they appear on objects.
var catalogued = []string{
	"operators.coreos.com/csv-cleanup",
	"tigera.io/cni-protector",
	"tigera.io/operator-cleanup",
	"operator.tigera.io/apiserver-controller",
	"kafka.triggers.eventing.knative.dev",
	"backup.kubevirt.io/vmbackup-protection",
	"dataprotection.kubeblocks.io/finalizer",
	"finalizer.kamaji.clastix.io/datastore-secret",
	"finalizer.kamaji.clastix.io",
	"workspace.finalizer.kaito.sh",
	"kopf.zalando.org/KopfFinalizerMarker",
	"finalizers.s3.services.k8s.aws/Bucket",
	"finalizers.services.k8s.aws/FieldExport",
	"cnrm.cloud.google.com/finalizer",
	"cnrm.cloud.google.com/deletion-defender",
	"configconnector.cnrm.cloud.google.com/finalizer",
}

// One object per finalizer (a ConfigMap, or a custom resource for the three
// with no domain prefix) holds a namespace being deleted, their owners long
// gone. explain names, for each, the owner its catalogue entry gives,
// in the JSON, in the FinalizersRemaining blocker and in the human view,
// and looks for the owner as the entry says: OLM's olm-operator runs (a
// Deployment of that name, ready), the other owners' workloads are not
// there, and the entries that name no workload (Kopf, ACK) are not checked.
func TestCatalogueNamesTheOwnersOfNewFinalizers(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	gvr, err := cluster.EnsureCRD(ctx, "catalogue.example.com", "Claim", "claims")
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	fakeWorkload(t, "olm", "olm-operator")
	for i, fin := range catalogued {
		held := fmt.Sprintf("held-%02d", i)
		if strings.Contains(fin, "/") {
			plugintest.Must(t, cluster.CreateConfigMap(ctx, name, held, nil, fin))
			t.Cleanup(func() { _ = cluster.ReleaseConfigMap(context.Background(), name, held) })
			continue
		}
		// The API server refuses a finalizer with no domain prefix on its
		// built-in types, and only warns on custom resources, where these
		// three are met: Knative Triggers, Kamaji TenantControlPlanes and
		// KAITO Workspaces.
		plugintest.Must(t, cluster.CreateCustomResource(ctx, gvr, "Claim", name, held, fin))
		t.Cleanup(func() {
			_, _ = cluster.Dynamic.Resource(gvr).Namespace(name).Patch(context.Background(), held, types.MergePatchType,
				[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		})
	}

	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)
	e := explain(t, cp.Kubeconfig, name)
	e.agrees(t)

	got := map[string]printer.FinalizerDocument{}
	for _, f := range e.report.Finalizers {
		got[f.Name] = f
	}
	// One FinalizersRemaining blocker per resource: configmaps, and claims.
	var evidence string
	for _, b := range e.report.Blockers {
		if b.Kind == diagnose.BlockerFinalizers {
			evidence += strings.Join(b.Evidence, "\n") + "\n"
		}
	}
	e.blocker(t, diagnose.BlockerFinalizers, "configmaps", "")
	e.blocker(t, diagnose.BlockerFinalizers, "claims", "")
	flat := strings.Join(strings.Fields(e.human), " ") // the human report wraps long lines
	for _, fin := range catalogued {
		entry := finalizers.Lookup(fin)
		if entry == nil {
			t.Errorf("%s: not in the catalogue", fin)
			continue
		}
		state, looked := diagnose.OwnerNotChecked, "names no workload"
		switch {
		case fin == "operators.coreos.com/csv-cleanup":
			state, looked = diagnose.OwnerRunningReady, "deployment olm/olm-operator: 1/1 ready"
		case len(entry.Detect.Workloads) > 0:
			w := entry.Detect.Workloads[0]
			state, looked = diagnose.OwnerNotFound, fmt.Sprintf("%s %s/%s", strings.ToLower(w.Kind), w.Namespace, w.Name)
		}

		f, ok := got[fin]
		switch {
		case !ok:
			t.Errorf("finalizer %s not reported; got %+v", fin, e.report.Finalizers)
			continue
		case !f.Known || f.Owner != entry.Owner || f.Project != entry.Project || f.Source != entry.Source || f.Leak != entry.Leak:
			t.Errorf("%s: known %v, owner %q, project %q, source %q; want the entry %+v", fin, f.Known, f.Owner, f.Project, f.Source, entry)
		case f.Objects != 1:
			t.Errorf("%s holds %d objects, want 1", fin, f.Objects)
		case f.OwnerState.State != state || !strings.Contains(f.OwnerState.Evidence, looked):
			t.Errorf("%s: owner %+v; want %s, %q", fin, f.OwnerState, state, looked)
		}
		if !strings.Contains(evidence, fin+": owner "+entry.Owner+";") {
			t.Errorf("FinalizersRemaining evidence does not name %s's owner %q:\n%s", fin, entry.Owner, evidence)
		}

		// The table cuts an owner at 45 characters.
		owner := []rune(entry.Owner)
		if len(owner) > 40 {
			owner = owner[:40]
		}
		if !strings.Contains(e.human, fin) || !strings.Contains(flat, string(owner)) ||
			!strings.Contains(e.human, "source: "+entry.Source) || !strings.Contains(flat, string(state)) {
			t.Errorf("human report lacks %s, its owner %q, its source or %s:\n%s", fin, string(owner), state, e.human)
		}
	}
}
