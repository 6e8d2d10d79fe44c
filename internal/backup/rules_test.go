package backup

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func obj(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(text), &u.Object); err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	return u
}

const (
	ownedByRS = `"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-5d","uid":"rs1","controller":true}]`
	ownedByDB = `"ownerReferences":[{"apiVersion":"db.example.com/v1","kind":"Database","name":"main","uid":"db1","controller":true,"blockOwnerDeletion":true}]`
)

// Every row of the restore table, each with an object it decides, what it
// decides and what the restored copy is: a row without a case here fails
// TestEveryRuleIsTested.
var ruleCases = []struct {
	rule     string
	gr       schema.GroupResource
	in       string
	restored []string // owner uids the restore brings back
	want     Verdict
	// check, for a restored object, reads the copy applied.
	check func(t *testing.T, o *unstructured.Unstructured)
}{
	{rule: "events", gr: grEvents, in: `{"apiVersion":"v1","kind":"Event","metadata":{"name":"e"}}`, want: LeaveOut},
	{rule: "endpoints", gr: grEndpointSets, in: `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"web-x"}}`, want: LeaveOut},
	{rule: "root-ca", gr: grConfigMaps, in: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kube-root-ca.crt"}}`, want: LeaveOut},
	{rule: "default-serviceaccount", gr: grAccounts, in: `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}}`, want: LeaveOut},
	{rule: "default-serviceaccount-additions", gr: grAccounts,
		in:   `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"},"imagePullSecrets":[{"name":"registry"}],"secrets":[{"name":"default-token-abcde"}]}`,
		want: Restore, check: func(t *testing.T, o *unstructured.Unstructured) {
			if _, ok := o.Object["secrets"]; ok || o.Object["imagePullSecrets"] == nil {
				t.Errorf("default account applied as %v", o.Object)
			}
		}},
	{rule: "token-secret-made-by-the-token-controller", gr: grSecrets,
		in:   `{"apiVersion":"v1","kind":"Secret","type":"kubernetes.io/service-account-token","metadata":{"name":"builder-token-x7k2p","annotations":{"kubernetes.io/service-account.name":"builder"}}}`,
		want: LeaveOut},
	{rule: "token-secret", gr: grSecrets,
		in:   `{"apiVersion":"v1","kind":"Secret","type":"kubernetes.io/service-account-token","metadata":{"name":"ci-token","annotations":{"kubernetes.io/service-account.name":"ci","kubernetes.io/service-account.uid":"old"}},"data":{"token":"dA==","ca.crt":"Yw==","extra":"eA=="}}`,
		want: Restore, check: func(t *testing.T, o *unstructured.Unstructured) {
			data, _, _ := unstructured.NestedMap(o.Object, "data")
			if len(data) != 1 || data["extra"] == nil || o.GetAnnotations()["kubernetes.io/service-account.uid"] != "" {
				t.Errorf("token secret applied as %v", o.Object)
			}
		}},
	{rule: "remade-by-its-controller", gr: grPods, in: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-5d-x",` + ownedByRS + `}}`, want: LeaveOut},
	{rule: "owner-not-restored", gr: schema.GroupResource{Group: "example.com", Resource: "widgets"},
		in: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w",` + ownedByDB + `}}`, want: LeaveOut},
	{rule: "service", gr: grServices,
		in:   `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"clusterIP":"10.0.0.7","clusterIPs":["10.0.0.7"],"type":"NodePort","ports":[{"port":80,"nodePort":30080}]}}`,
		want: Restore, check: func(t *testing.T, o *unstructured.Unstructured) {
			_, hasIP, _ := unstructured.NestedString(o.Object, "spec", "clusterIP")
			ports, _, _ := unstructured.NestedSlice(o.Object, "spec", "ports")
			if hasIP || ports[0].(map[string]any)["nodePort"] == nil {
				t.Errorf("service applied as %v: want no cluster IP, the node port kept", o.Object)
			}
		}},
	{rule: "job", gr: grJobs,
		in: `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"migrate"},"spec":{"selector":{"matchLabels":{"batch.kubernetes.io/controller-uid":"u"}},` +
			`"template":{"metadata":{"labels":{"batch.kubernetes.io/controller-uid":"u","controller-uid":"u","batch.kubernetes.io/job-name":"migrate","job-name":"migrate","app":"db"}}}}}`,
		want: Restore, check: func(t *testing.T, o *unstructured.Unstructured) {
			labels, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "labels")
			_, hasSelector, _ := unstructured.NestedMap(o.Object, "spec", "selector")
			if !reflect.DeepEqual(labels, map[string]string{"app": "db"}) || hasSelector {
				t.Errorf("job applied as %v", o.Object)
			}
		}},
	{rule: "pod", gr: grPods,
		in: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"debug"},"spec":{"nodeName":"n1","priorityClassName":"high","priority":1000,` +
			`"volumes":[{"name":"kube-api-access-abcde","projected":{}},{"name":"data","emptyDir":{}}],` +
			`"containers":[{"name":"c","volumeMounts":[{"name":"kube-api-access-abcde","mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"},{"name":"data","mountPath":"/d"}]}]}}`,
		want: Restore, check: func(t *testing.T, o *unstructured.Unstructured) {
			text, _ := json.Marshal(o.Object)
			if strings.Contains(string(text), "kube-api-access") || strings.Contains(string(text), "nodeName") ||
				strings.Contains(string(text), `"priority":`) || !strings.Contains(string(text), `"mountPath":"/d"`) {
				t.Errorf("pod applied as %s", text)
			}
		}},
	{rule: "claim", gr: grClaims,
		in:       `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data",` + ownedByDB + `,"annotations":{"pv.kubernetes.io/bind-completed":"yes"}},"spec":{"volumeName":"pv-1"}}`,
		restored: []string{"db1"}, want: Restore, check: func(t *testing.T, o *unstructured.Unstructured) {
			v, _, _ := unstructured.NestedString(o.Object, "spec", "volumeName")
			if v != "pv-1" || len(o.GetAnnotations()) != 0 || len(o.GetOwnerReferences()) != 1 || o.GetOwnerReferences()[0].UID != "db1" {
				t.Errorf("claim applied as %v: want its volume, its owner, no binder marks", o.Object)
			}
		}},
	{rule: "rolebinding", gr: grRoleBindings,
		in:   `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"web"},"subjects":[{"kind":"ServiceAccount","name":"web","namespace":"shop"},{"kind":"ServiceAccount","name":"ci","namespace":"tools"}]}`,
		want: Restore, check: func(t *testing.T, o *unstructured.Unstructured) {
			subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
			if subjects[0].(map[string]any)["namespace"] != "shop-copy" || subjects[1].(map[string]any)["namespace"] != "tools" {
				t.Errorf("clone's binding applied with subjects %v", subjects)
			}
		}},
	{rule: "as-saved", gr: grSecrets,
		in:   `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db-credentials",` + ownedByDB + `},"data":{"password":"cA=="}}`,
		want: Restore, check: func(t *testing.T, o *unstructured.Unstructured) {
			if len(o.GetOwnerReferences()) != 0 {
				t.Errorf("secret whose owner is not restored applied with owners %v", o.GetOwnerReferences())
			}
		}},
}

func TestRules(t *testing.T) {
	for _, c := range ruleCases {
		t.Run(c.rule, func(t *testing.T) {
			in := Context{Restored: map[string]bool{}, Clone: true, From: "shop", Into: "shop-copy"}
			for _, uid := range c.restored {
				in.Restored[uid] = true
			}
			d := Decide(c.gr, obj(t, c.in), in)
			if d.Rule != c.rule || d.Verdict != c.want || d.Why == "" || strings.Contains(d.Why, "%") {
				t.Fatalf("decided by %q: %s, %q; want %q: %s", d.Rule, d.Verdict, d.Why, c.rule, c.want)
			}
			if (d.Object != nil) != (c.want == Restore) {
				t.Fatalf("object to apply: %v, verdict %s", d.Object, d.Verdict)
			}
			if c.check != nil {
				c.check(t, d.Object)
			}
		})
	}
}

func TestEveryRuleIsTested(t *testing.T) {
	var tested []string
	for _, c := range ruleCases {
		tested = append(tested, c.rule)
	}
	for _, r := range Rules() {
		if !slices.Contains(tested, r.Name) {
			t.Errorf("row %q of the restore table has no case in ruleCases", r.Name)
		}
		if r.Why == "" {
			t.Errorf("row %q has no reason", r.Name)
		}
	}
}

// A headless Service stays headless: its cluster IP None is what makes it
// so, and a StatefulSet's per-pod DNS names rely on it.
func TestHeadlessServiceStaysHeadless(t *testing.T) {
	d := Decide(grServices, obj(t, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"db"},"spec":{"clusterIP":"None","clusterIPs":["None"]}}`), Context{})
	if ip, _, _ := unstructured.NestedString(d.Object.Object, "spec", "clusterIP"); ip != "None" || len(d.Notes) != 0 {
		t.Fatalf("headless service applied as %v (notes %v)", d.Object.Object, d.Notes)
	}
}

// A Job that chose its own selector keeps it.
func TestManualSelectorJobKeepsItsLabels(t *testing.T) {
	d := Decide(grJobs, obj(t, `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},"spec":{"manualSelector":true,"selector":{"matchLabels":{"controller-uid":"mine"}}}}`), Context{})
	if l, _, _ := unstructured.NestedString(d.Object.Object, "spec", "selector", "matchLabels", "controller-uid"); l != "mine" {
		t.Fatalf("manual selector job applied as %v", d.Object.Object)
	}
}

// A claim whose volume another claim holds (a clone's, while the original
// runs) or that is gone gets a new volume, and the plan says so; a claim
// whose volume is there and free keeps it.
func TestClaimOfAVolumeTakenOrGone(t *testing.T) {
	claim := `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data"},"spec":{"volumeName":"pv-1"}}`
	for fact, want := range map[VolumeFact]string{{Unusable: "is bound to shop/data"}: "bound to shop/data", {Unusable: "is gone"}: "is gone"} {
		d := Decide(grClaims, obj(t, claim), Context{Restored: map[string]bool{}, Clone: true, Volumes: map[string]VolumeFact{"pv-1": fact}})
		if _, has, _ := unstructured.NestedString(d.Object.Object, "spec", "volumeName"); has || len(d.Notes) != 1 || !strings.Contains(d.Notes[0], want) {
			t.Fatalf("claim of a volume %+v: %v, notes %v", fact, d.Object.Object, d.Notes)
		}
	}
	d := Decide(grClaims, obj(t, claim), Context{Restored: map[string]bool{}, Volumes: map[string]VolumeFact{"pv-1": {}}})
	if v, _, _ := unstructured.NestedString(d.Object.Object, "spec", "volumeName"); v != "pv-1" {
		t.Fatalf("claim of a free volume lost it: %v", d.Object.Object)
	}
}

// A plan applies the types in the table's order, an owned object right
// after its owner (with the owner's uid to map), and leaves out the rest
// after them.
func TestPlanOrdersOwnersFirst(t *testing.T) {
	f := &Folder{Dir: "d", Manifest: Manifest{Namespace: "shop"}}
	add := func(gr schema.GroupResource, uid, text string) {
		o := obj(t, text)
		f.Objects = append(f.Objects, SavedObject{Entry: Entry{Group: gr.Group, Resource: gr.Resource, Name: o.GetName(), UID: uid,
			Owners: o.GetOwnerReferences(), File: "objects/" + gr.Resource}, Object: o})
	}
	dbs := schema.GroupResource{Group: "db.example.com", Resource: "databases"}
	add(grClaims, "c1", `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"main-1",`+ownedByDB+`}}`)
	add(grSecrets, "s1", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"main-app",`+ownedByDB+`}}`)
	add(grConfigMaps, "cm", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"}}`)
	add(dbs, "db1", `{"apiVersion":"db.example.com/v1","kind":"Database","metadata":{"name":"main"}}`)
	add(grAccounts, "sa", `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"app"}}`)
	add(schema.GroupResource{Group: "apps", Resource: "deployments"}, "dep", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"}}`)
	add(grPods, "p1", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-5d-x",`+ownedByRS+`}}`)
	add(grEvents, "ev", `{"apiVersion":"v1","kind":"Event","metadata":{"name":"e1"}}`)
	p := MakePlan(f, "shop", Context{})
	var order []string
	for _, s := range p.Steps {
		order = append(order, string(s.Verdict)+" "+s.Resource+"/"+s.Name)
	}
	want := []string{"Restore serviceaccounts/app", "Restore configmaps/settings", "Restore databases/main",
		"Restore secrets/main-app", "Restore persistentvolumeclaims/main-1", "Restore deployments/web",
		"LeaveOut events/e1", "LeaveOut pods/web-5d-x"}
	if !reflect.DeepEqual(order, want) {
		t.Fatalf("plan order\n%s\nwant\n%s", strings.Join(order, "\n"), strings.Join(want, "\n"))
	}
	if p.Clone() || p.Restored() != 6 || len(p.Notes) != 1 {
		t.Fatalf("plan: clone %v, restored %d, notes %v", p.Clone(), p.Restored(), p.Notes)
	}
}

var updateDocs = flag.Bool("update", false, "rewrite the generated parts of docs/restore.md")

// docs/restore.md renders the restore table and the order from the code:
// a row or a stage added without its words there fails here (-update
// rewrites them).
func TestRestoreTableIsDocumented(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "restore.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	for _, part := range []struct{ name, text string }{{"rules", rulesTable()}, {"order", orderTable()}} {
		begin := "<!-- " + part.name + ": generated"
		end := "<!-- end of " + part.name + " -->"
		i, j := strings.Index(doc, begin), strings.Index(doc, end)
		if i < 0 || j < i {
			t.Fatalf("docs/restore.md lacks the markers of %s", part.name)
		}
		i += strings.Index(doc[i:], "\n") + 1
		if doc[i:j] != part.text {
			if *updateDocs {
				doc = doc[:i] + part.text + doc[j:]
				continue
			}
			t.Errorf("docs/restore.md's %s differ from the code; run go test ./internal/backup -run TestRestoreTableIsDocumented -update", part.name)
		}
	}
	if *updateDocs {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func rulesTable() string {
	var b strings.Builder
	b.WriteString("| row | objects | restore | why |\n|---|---|---|---|\n")
	for _, r := range Rules() {
		types := "any"
		if len(r.Resources) > 0 {
			var names []string
			for _, gr := range r.Resources {
				names = append(names, "`"+gr.String()+"`")
			}
			types = strings.Join(names, ", ")
		}
		if r.Which != "" {
			types += ": " + r.Which
		}
		why := strings.ReplaceAll(r.Why, "%s", "KIND NAME")
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.Name, types, map[Verdict]string{Restore: "yes", LeaveOut: "left out"}[r.Verdict], why)
	}
	return b.String()
}

func orderTable() string {
	var b strings.Builder
	b.WriteString("| # | types | why |\n|---|---|---|\n")
	for i, s := range Order() {
		types := "every type not listed, by resource and group"
		if s.Resources != nil {
			var names []string
			for _, gr := range s.Resources {
				names = append(names, "`"+gr.String()+"`")
			}
			types = strings.Join(names, ", ")
		}
		fmt.Fprintf(&b, "| %d | %s | %s |\n", i+1, types, s.Why)
	}
	return b.String()
}
