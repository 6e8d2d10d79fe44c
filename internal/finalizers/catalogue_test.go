package finalizers

import (
	"net/url"
	"path"
	"strings"
	"testing"
)

// Every entry has an owner, what it guards, what stripping it leaks and a
// public source; globs are valid and never shadow an exact entry.
func TestCatalogueEntriesAreComplete(t *testing.T) {
	all, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 40 {
		t.Fatalf("%d entries", len(all))
	}
	seen := map[string]bool{}
	for _, e := range all {
		if e.Finalizer == "" || e.Owner == "" || e.Project == "" || e.Guards == "" || e.Leak == "" {
			t.Errorf("incomplete entry %+v", e)
		}
		if u, err := url.Parse(e.Source); err != nil || u.Scheme != "https" || u.Host == "" {
			t.Errorf("%s: source %q is not a public URL", e.Finalizer, e.Source)
		}
		if _, err := path.Match(e.Finalizer, ""); err != nil {
			t.Errorf("%s: bad glob: %v", e.Finalizer, err)
		}
		if seen[e.Finalizer] {
			t.Errorf("%s listed twice", e.Finalizer)
		}
		seen[e.Finalizer] = true
		for _, w := range e.Detect.Workloads {
			if (w.Kind != "Deployment" && w.Kind != "StatefulSet" && w.Kind != "DaemonSet") || w.Name == "" {
				t.Errorf("%s: workload %+v", e.Finalizer, w)
			}
		}
		if e.Detect.Builtin && len(e.Detect.Workloads) > 0 {
			t.Errorf("%s: built in and a workload", e.Finalizer)
		}
	}
	for _, e := range all {
		if !strings.ContainsAny(e.Finalizer, "*?[") {
			continue
		}
		for exact := range seen {
			if ok, _ := path.Match(e.Finalizer, exact); ok && exact != e.Finalizer && Lookup(exact).Finalizer != exact {
				t.Errorf("glob %s shadows %s", e.Finalizer, exact)
			}
		}
	}
}

func TestLookup(t *testing.T) {
	for finalizer, owner := range map[string]string{
		"kubernetes.io/pvc-protection":           "pvc-protection",
		"resources-finalizer.argocd.argoproj.io": "Argo CD",
		"external-attacher/ebs-csi-aws-com":      "external-attacher",
		"cephblockpool.ceph.rook.io":             "Rook",
		"controller.cattle.io/some-handler":      "Rancher",
		"example.com/nobody-knows":               "",

		"operators.coreos.com/csv-cleanup":                "olm-operator",
		"tigera.io/cni-protector":                         "Tigera operator, Installation",
		"tigera.io/operator-cleanup":                      "Tigera operator, Installation",
		"operator.tigera.io/apiserver-controller":         "Tigera operator, API server controller",
		"kafka.triggers.eventing.knative.dev":             "kafka-controller",
		"backup.kubevirt.io/vmbackup-protection":          "VirtualMachineBackup controller",
		"dataprotection.kubeblocks.io/finalizer":          "KubeBlocks data protection",
		"finalizer.kamaji.clastix.io/datastore-secret":    "Kamaji",
		"finalizer.kamaji.clastix.io":                     "Kamaji",
		"workspace.finalizer.kaito.sh":                    "KAITO workspace controller",
		"kopf.zalando.org/KopfFinalizerMarker":            "Kopf-based operator",
		"finalizers.s3.services.k8s.aws/Bucket":           "ACK service controller",
		"finalizers.rds.services.k8s.aws/DBInstance":      "ACK service controller",
		"finalizers.services.k8s.aws/FieldExport":         "field export reconciler",
		"cnrm.cloud.google.com/finalizer":                 "Config Connector controller manager",
		"cnrm.cloud.google.com/deletion-defender":         "Config Connector deletion defender",
		"configconnector.cnrm.cloud.google.com/finalizer": "Config Connector operator",
		"finalizers.s3.services.k8s.aws/Bucket/extra":     "",
		"finalizers.services.k8s.aws/Other":               "",
	} {
		e := Lookup(finalizer)
		switch {
		case owner == "" && e != nil:
			t.Errorf("%s: found %+v", finalizer, e)
		case owner != "" && (e == nil || !strings.Contains(e.Owner+" "+e.Project, owner)):
			t.Errorf("%s: %+v, want an owner naming %s", finalizer, e, owner)
		}
	}
}
