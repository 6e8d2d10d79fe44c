package installers

import (
	"errors"
	"strings"
	"testing"
)

func helmMarks(name, ns string) map[string]string {
	return map[string]string{"meta.helm.sh/release-name": name, "meta.helm.sh/release-namespace": ns}
}

func TestTableIsComplete(t *testing.T) {
	entries, err := Table()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 2 {
		t.Fatalf("%d entries", len(entries))
	}
	for _, e := range entries {
		if e.Manager == "" || e.Kind == "" || len(e.Records) == 0 || len(e.Source) == 0 || (e.Name.Label == "") == (e.Name.Annotation == "") {
			t.Errorf("entry %+v lacks a manager, kind, name mark, record or source", e)
		}
		for _, r := range e.Records {
			if (r.Name == "") == (r.Selector == "") || r.Version == "" || r.Resource == "" {
				t.Errorf("%s: record %+v needs a version, a resource and one of name or selector", e.Manager, r)
			}
		}
	}
}

func TestOfReadsTheMarks(t *testing.T) {
	i := Of(nil, helmMarks("billing", "billing-system"))
	if i == nil || i.String() != "Helm release billing-system/billing" {
		t.Fatalf("helm: %+v", i)
	}
	olm := map[string]string{"olm.owner": "ledger.v1.2.0", "olm.owner.namespace": "operators", "olm.owner.kind": "ClusterServiceVersion"}
	if i := Of(olm, nil); i == nil || i.String() != "OLM ClusterServiceVersion operators/ledger.v1.2.0" {
		t.Fatalf("olm: %+v", i)
	}
	// The kind must be the manager's; a name without its namespace is not
	// a mark.
	olm["olm.owner.kind"] = "OperatorGroup"
	for _, m := range []struct{ labels, annotations map[string]string }{
		{olm, nil},
		{nil, map[string]string{"meta.helm.sh/release-name": "billing"}},
		{map[string]string{"app.kubernetes.io/managed-by": "Helm"}, nil},
		{nil, nil},
	} {
		if i := Of(m.labels, m.annotations); i != nil {
			t.Errorf("%v %v: %+v", m.labels, m.annotations, i)
		}
	}
}

func TestQueries(t *testing.T) {
	i := Of(nil, helmMarks("billing", "billing-system"))
	qs := i.Queries()
	if len(qs) != 2 || qs[0].String() != "secrets -l owner=helm,name=billing -n billing-system" || qs[1].Resource.Resource != "configmaps" {
		t.Fatalf("%+v", qs)
	}
	olm := Of(map[string]string{"olm.owner": "ledger.v1", "olm.owner.namespace": "operators", "olm.owner.kind": "ClusterServiceVersion"}, nil)
	if q := olm.Queries(); len(q) != 1 || q[0].String() != "clusterserviceversions.operators.coreos.com ledger.v1 -n operators" {
		t.Fatalf("%+v", q)
	}
	if p := olm.FieldPath(0); strings.Join(p, ".") != "status.phase" {
		t.Errorf("field %v", p)
	}
}

func TestJudge(t *testing.T) {
	rev := func(v, status string) Seen {
		return Seen{Name: "sh.helm.release.v1.billing.v" + v, Labels: map[string]string{"owner": "helm", "name": "billing", "version": v, "status": status}}
	}
	cases := []struct {
		name    string
		found   []Found
		state   State
		record  string
		removed bool
	}{
		{"deployed", []Found{{Records: []Seen{rev("1", "superseded"), rev("2", "deployed")}}, {}}, Installed, "secret sh.helm.release.v1.billing.v2: deployed", false},
		{"kept history", []Found{{Records: []Seen{rev("10", "uninstalled"), rev("9", "superseded")}}, {}}, Uninstalled, "secret sh.helm.release.v1.billing.v10: uninstalled", true},
		{"uninstalled", []Found{{}, {}}, Gone, "no record: nothing found by kubectl get secrets -l owner=helm,name=billing -n billing-system, nor configmaps", true},
		{"configmap driver", []Found{{}, {Records: []Seen{rev("3", "deployed")}}}, Installed, "configmap sh.helm.release.v1.billing.v3: deployed", false},
		{"unreadable", []Found{{Unreadable: errors.New("forbidden")}, {}}, Unknown, "forbidden", false},
		{"being deleted", []Found{{Records: []Seen{{Name: "x", Labels: map[string]string{"status": "deployed"}, Deleting: true}}}, {}}, Uninstalled, "(being deleted)", true},
	}
	for _, c := range cases {
		i := Of(nil, helmMarks("billing", "billing-system"))
		i.Judge(c.found)
		i.WorkloadsRead = true
		if i.State != c.state || !strings.Contains(i.Record, c.record) || i.Removed() != c.removed {
			t.Errorf("%s: %s %q removed=%v", c.name, i.State, i.Record, i.Removed())
		}
		// A workload bearing its marks still runs, or none was read: the
		// records alone conclude nothing.
		i.Workloads = []string{"deployment/billing-operator"}
		if i.Removed() {
			t.Errorf("%s: removed while a workload of it runs", c.name)
		}
		i.Workloads, i.WorkloadsRead = nil, false
		if i.Removed() {
			t.Errorf("%s: removed with its workloads unread", c.name)
		}
	}
	olm := Of(map[string]string{"olm.owner": "ledger.v1", "olm.owner.namespace": "operators", "olm.owner.kind": "ClusterServiceVersion"}, nil)
	olm.Judge([]Found{{Records: []Seen{{Name: "ledger.v1", Field: "Deleting"}}}})
	if olm.State != Uninstalled || olm.Record != "clusterserviceversion ledger.v1: Deleting" {
		t.Errorf("olm: %s %q", olm.State, olm.Record)
	}
}

func TestSame(t *testing.T) {
	i := Of(nil, helmMarks("billing", "billing-system"))
	if !i.Same(nil, helmMarks("billing", "billing-system")) || i.Same(nil, helmMarks("billing", "other")) || i.Same(nil, nil) {
		t.Error("Same")
	}
}
