package owners

import (
	"slices"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func entry(manager string, op metav1.ManagedFieldsOperationType, at time.Time, fields string) metav1.ManagedFieldsEntry {
	t := metav1.NewTime(at)
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Time: &t, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
}

// The manager owning f:metadata/f:finalizers/v:"<finalizer>" set it; a
// sweep keeps only such entries, reduced to the finalizers, and a
// namespace's spec.finalizers tokens are read under f:spec.
func TestManagersOfAFinalizer(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	entries := []metav1.ManagedFieldsEntry{
		entry("kubectl-client-side-apply", metav1.ManagedFieldsOperationUpdate, at,
			`{"f:metadata":{"f:annotations":{".":{},"f:note":{}},"f:labels":{"f:app":{}}},"f:data":{"f:key":{}}}`),
		entry("acme-operator", metav1.ManagedFieldsOperationUpdate, at.Add(time.Minute),
			`{"f:metadata":{"f:finalizers":{".":{},"v:\"acme.example.com/cleanup\"":{},"v:\"acme.example.com/other\"":{}}},"f:status":{"f:phase":{}}}`),
		entry("helm", metav1.ManagedFieldsOperationApply, at.Add(-time.Hour),
			`{"f:metadata":{"f:finalizers":{"v:\"acme.example.com/cleanup\"":{}}}}`),
		entry("tenancy", metav1.ManagedFieldsOperationUpdate, at, `{"f:spec":{"f:finalizers":{"v:\"tenancy.example.com/space\"":{}}}}`),
		{Manager: "broken", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:finalizers":`)},
	}
	got := ManagersOf(entries, MetadataFinalizers, "acme.example.com/cleanup", "widgets/w1")
	if len(got) != 2 || got[0].Name != "acme-operator" || got[0].Applier || got[0].Operation != "Update" || !got[0].Time.Equal(at.Add(time.Minute)) ||
		got[1].Name != "helm" || !got[1].Applier || got[0].Object != "widgets/w1" {
		t.Errorf("managers %+v", got)
	}
	if spec := ManagersOf(entries, SpecFinalizers, "tenancy.example.com/space", ""); len(spec) != 1 || spec[0].Name != "tenancy" {
		t.Errorf("spec managers %+v", spec)
	}
	// A Namespace's spec.finalizers is atomic: its manager owns every
	// token; the controller's finalize is not who set them.
	atomic := []metav1.ManagedFieldsEntry{
		entry("tenancy", metav1.ManagedFieldsOperationUpdate, at, `{"f:spec":{"f:finalizers":{}}}`),
		entry("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, at.Add(time.Hour), `{"f:spec":{"f:finalizers":{}}}`),
	}
	atomic[1].Subresource = "finalize"
	if spec := ManagersOf(atomic, SpecFinalizers, "tenancy.example.com/space", ""); len(spec) != 1 || spec[0].Name != "tenancy" {
		t.Errorf("atomic spec managers %+v", spec)
	}

	kept, named := KeepFinalizerEntries(entries, []string{"acme.example.com/cleanup", "nobody.example.com/set"})
	if len(kept) != 2 || kept[0].Manager != "acme-operator" || kept[1].Manager != "helm" {
		t.Fatalf("kept %+v", kept)
	}
	if !slices.Equal(named, []string{"acme.example.com/cleanup"}) {
		t.Errorf("named %v: want the asked finalizer an entry owns, not the one nobody's entry owns", named)
	}
	if raw := kept[0].FieldsV1.GetRawString(); raw != `{"f:metadata":{"f:finalizers":{"v:\"acme.example.com/cleanup\"":{},"v:\"acme.example.com/other\"":{}}}}` {
		t.Errorf("reduced fields %s", raw)
	}
	if again := ManagersOf(kept, MetadataFinalizers, "acme.example.com/other", ""); len(again) != 1 || again[0].Name != "acme-operator" {
		t.Errorf("read back from the reduced entries: %+v", again)
	}
	if kept, _ := KeepFinalizerEntries(entries, nil); kept != nil {
		t.Error("an object without finalizers keeps managed fields")
	}
}

func grant(ns, name, role string) Grant {
	return Grant{Subject: Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}, Verb: "patch",
		Role: Ref{Kind: "ClusterRole", Name: role}, Binding: Ref{Kind: "ClusterRoleBinding", Name: role}}
}

func deployment(ns, name, account string, ready int32, containers ...string) Workload {
	return Workload{Kind: "Deployment", Namespace: ns, Name: name, ServiceAccount: account, Ready: ready, Want: 1, Containers: containers}
}

// Inference names an owner only as far as the cluster says it, and says
// how sure: the field manager and RBAC agreeing is certain; RBAC alone,
// with one candidate or one that writes the finalizer's API, is likely;
// anything ambiguous names nobody but the candidates. An owner living in
// the namespace being deleted is said to be.
func TestInfer(t *testing.T) {
	op := Manager{Name: "acme-operator", Operation: "Update"}
	kubebuilder := Manager{Name: "manager", Operation: "Update"}
	kubectl := Manager{Name: "kubectl-client-side-apply", Applier: true}
	acme := grant("acme-system", "acme-operator", "acme-operator")
	other := grant("other-system", "other", "other")
	wild := grant("tools", "god", "everything")
	wild.Wildcard = true
	builtin := grant("kube-system", "generic-garbage-collector", "system:controller:generic-garbage-collector")
	builtin.Builtin = true
	for _, tc := range []struct {
		name       string
		req        Request
		confidence Confidence
		workload   string
		identity   string
		inNS       bool
		ownerNS    string
	}{
		{name: "manager and RBAC agree",
			req: Request{Managers: []Manager{op}, Grants: []Grant{wild, other, acme, builtin},
				Workloads: []Workload{deployment("acme-system", "acme-operator", "acme-operator", 1), deployment("other-system", "other", "other", 1)}},
			confidence: Certain, workload: "deployment acme-system/acme-operator", identity: "serviceaccount acme-system/acme-operator"},
		{name: "kubebuilder's manager container",
			req: Request{Managers: []Manager{kubebuilder}, Grants: []Grant{other, acme},
				Workloads: []Workload{deployment("acme-system", "acme-controller-manager", "acme-operator", 1, "kube-rbac-proxy", "manager"), deployment("other-system", "other", "other", 1, "other")}},
			confidence: Certain, workload: "deployment acme-system/acme-controller-manager", identity: "serviceaccount acme-system/acme-operator"},
		{name: "the one candidate, set by kubectl",
			req:        Request{Managers: []Manager{kubectl}, Grants: []Grant{wild, acme}, Workloads: []Workload{deployment("acme-system", "acme-operator", "acme-operator", 0)}},
			confidence: Likely, workload: "deployment acme-system/acme-operator", identity: "serviceaccount acme-system/acme-operator"},
		{name: "two candidates, nothing tells",
			req:        Request{Finalizer: "widgets.example.com/x", Grants: []Grant{acme, other}},
			confidence: None},
		{name: "two candidates, one writes the finalizer's API",
			req:        Request{Grants: []Grant{other, acme}, APIGrants: []Grant{acme}},
			confidence: Likely, identity: "serviceaccount acme-system/acme-operator"},
		{name: "two candidates, one carries the domain",
			req:        Request{Finalizer: "acme.example.com/cleanup", Grants: []Grant{other, acme}},
			confidence: Likely, identity: "serviceaccount acme-system/acme-operator"},
		{name: "only wildcards and built-in roles",
			req:        Request{Managers: []Manager{op}, Grants: []Grant{wild, builtin}},
			confidence: None},
		{name: "no RBAC read, a workload named as the manager",
			req:        Request{Managers: []Manager{op}, Workloads: []Workload{deployment("acme-system", "acme-operator", "acme-operator", 1)}},
			confidence: Likely, workload: "deployment acme-system/acme-operator"},
		{name: "deleted with the namespace: its account lived there",
			req:        Request{Namespace: "team-a", Managers: []Manager{op}, Grants: []Grant{grant("team-a", "acme-operator", "acme-operator"), other}},
			confidence: Certain, identity: "serviceaccount team-a/acme-operator", inNS: true},
		{name: "a namespace's whole group of accounts",
			req: Request{Managers: []Manager{op}, Grants: []Grant{{Subject: Subject{Kind: rbacv1.GroupKind, Name: "system:serviceaccounts:acme-system"}, Verb: "patch"}},
				Workloads: []Workload{deployment("acme-system", "acme-operator", "default", 1)}, Namespaces: map[string]string{"acme-system": NamespaceTerminating}},
			confidence: Certain, workload: "deployment acme-system/acme-operator", identity: "group system:serviceaccounts:acme-system", ownerNS: NamespaceTerminating},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Infer(tc.req)
			workload, identity := "", ""
			if got.Workload != nil {
				workload = got.Workload.String()
			}
			if got.Identity != nil {
				identity = got.Identity.String()
			}
			if got.Confidence != tc.confidence || workload != tc.workload || identity != tc.identity || got.InNamespace != tc.inNS || got.OwnerNamespace != tc.ownerNS {
				t.Errorf("got %s, workload %q, identity %q, in namespace %v, owner namespace %q; want %s, %q, %q, %v, %q",
					got.Confidence, workload, identity, got.InNamespace, got.OwnerNamespace, tc.confidence, tc.workload, tc.identity, tc.inNS, tc.ownerNS)
			}
		})
	}
}

// What is read for an inference stays bounded: the candidates'
// namespaces (specific grants only), and the controllers' field managers.
func TestWhatInferenceReads(t *testing.T) {
	wild := grant("tools", "god", "everything")
	wild.Wildcard = true
	grants := []Grant{grant("b", "x", "r"), grant("a", "y", "r"), wild, grant("b", "z", "r")}
	if got := Namespaces(grants); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("namespaces %v", got)
	}
	managers := []Manager{{Name: "kubectl-edit", Applier: true}, {Name: "op"}, {Name: "op"}, {Name: "b"}, {Name: "c"}, {Name: "d"}}
	if got := ManagerNames(managers); !slices.Equal(got, []string{"op", "b", "c"}) {
		t.Errorf("manager names %v", got)
	}
	if got := DomainGroups("finalizers.s3.services.k8s.aws/Bucket", []string{"s3.services.k8s.aws", "services.k8s.aws", "ec2.services.k8s.aws", ""}); !slices.Equal(got, []string{"s3.services.k8s.aws", "services.k8s.aws"}) {
		t.Errorf("domain groups %v", got)
	}
	if got := DomainGroups("kubernetes", []string{"apps"}); got != nil {
		t.Errorf("domain groups of a token %v", got)
	}
}

// The setter taken for the runner: a controller set the finalizer, and
// the one identity that may remove it runs a workload whose name and
// containers do not match that field manager (a shared account, another
// install). That workload runs, but it is no evidence that whoever
// removes the finalizer does: the inference is unmatched and not
// Running. Where the names match (the workload, a container, or the
// account itself), or the finalizer came with a manifest (no controller
// set it), it still is.
func withBinary(w Workload, binary string) Workload {
	w.Binaries = append(w.Binaries, binary)
	return w
}

func TestSetterIsNotTakenForTheRunner(t *testing.T) {
	reaper := Manager{Name: "lockbox-reaper", Operation: "Update"}
	shared := grant("ops", "shared-ops", "shared-ops")
	for _, tc := range []struct {
		name      string
		req       Request
		unmatched bool
	}{
		{"another workload runs as the account",
			Request{Managers: []Manager{reaper}, Grants: []Grant{shared}, Workloads: []Workload{deployment("ops", "dashboard", "shared-ops", 1, "web")}}, true},
		{"the workload is named as the setter",
			Request{Managers: []Manager{reaper}, Grants: []Grant{shared}, Workloads: []Workload{deployment("ops", "lockbox-reaper", "shared-ops", 1, "main")}}, false},
		{"a container is named as the setter",
			Request{Managers: []Manager{reaper}, Grants: []Grant{shared}, Workloads: []Workload{deployment("ops", "lockbox", "shared-ops", 1, "lockbox-reaper")}}, false},
		{"a container's binary is named as the setter",
			Request{Managers: []Manager{reaper}, Grants: []Grant{shared}, Workloads: []Workload{withBinary(deployment("ops", "lockbox", "shared-ops", 1, "main"), "lockbox-reaper")}}, false},
		{"another binary is no match",
			Request{Managers: []Manager{reaper}, Grants: []Grant{shared}, Workloads: []Workload{withBinary(deployment("ops", "dashboard", "shared-ops", 1, "web"), "dashboard-server")}}, true},
		{"the account is named as the setter",
			Request{Managers: []Manager{reaper}, Grants: []Grant{grant("ops", "lockbox-reaper", "r")}, Workloads: []Workload{deployment("ops", "dashboard", "lockbox-reaper", 1)}}, false},
		{"set with a manifest: no controller to match",
			Request{Managers: []Manager{{Name: "kubectl-client-side-apply", Applier: true}}, Grants: []Grant{shared}, Workloads: []Workload{deployment("ops", "dashboard", "shared-ops", 1)}}, false},
	} {
		got := Infer(tc.req)
		if got.Workload == nil || got.Unmatched != tc.unmatched || got.Running() == tc.unmatched {
			t.Errorf("%s: workload %v, unmatched %v, running %v; want unmatched %v", tc.name, got.Workload, got.Unmatched, got.Running(), tc.unmatched)
		}
	}
}

// The setter runs nowhere when no workload of the cluster is the field
// manager that set the finalizer, by its name, its containers' names or
// binaries, or the labels that name what it runs; an applier is no setter,
// and a setter that runs under another workload's name is somewhere.
func TestSetterNowhere(t *testing.T) {
	all := []Workload{
		{Kind: "Deployment", Namespace: "vault-dashboards", Name: "dashboard", Containers: []string{"web"}},
		{Kind: "Deployment", Namespace: "ops", Name: "toolbox", Containers: []string{"main"}, Binaries: []string{"lockbox-reaper"}},
		{Kind: "DaemonSet", Namespace: "agents", Name: "node-agent", Labels: []string{"fleet-syncer"}},
	}
	for _, tc := range []struct {
		managers []Manager
		want     bool
	}{
		{[]Manager{{Name: "gizmo-reaper"}}, true},
		{[]Manager{{Name: "lockbox-reaper"}}, false},
		{[]Manager{{Name: "fleet-syncer"}}, false},
		{[]Manager{{Name: "dashboard"}}, false},
		{[]Manager{{Name: "kubectl", Applier: true}}, false},
		{nil, false},
	} {
		if got := SetterNowhere(tc.managers, all); got != tc.want {
			t.Errorf("%+v: %v, want %v", tc.managers, got, tc.want)
		}
	}
}
