package inspect

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/installers"
)

// workloadTypes are what runs an operator, read for the marks of the
// installation that installed it.
var workloadTypes = []schema.GroupVersionResource{
	{Group: "apps", Version: "v1", Resource: "deployments"},
	{Group: "apps", Version: "v1", Resource: "statefulsets"},
	{Group: "apps", Version: "v1", Resource: "daemonsets"},
}

// readInstallers reads, for each fail-closed webhook whose backend is
// down and whose configuration a lifecycle manager marked, that manager's
// records of the installation and the workloads bearing its marks: once
// per installation. A webhook whose backend is up needs neither.
func (i *Inspector) readInstallers(ctx context.Context) {
	read := map[string]installers.Installer{}
	for k := range i.webhooks {
		wh := &i.webhooks[k]
		if wh.Installer == nil || wh.Service == nil || wh.FailurePolicy != "Fail" || !i.services[wh.Service.Key()].Down() {
			continue
		}
		key := wh.Installer.String()
		if _, done := read[key]; !done {
			inst := *wh.Installer
			i.readInstaller(ctx, &inst)
			read[key] = inst
		}
		inst := read[key]
		wh.Installer = &inst
	}
}

func (i *Inspector) readInstaller(ctx context.Context, inst *installers.Installer) {
	queries := inst.Queries()
	found := make([]installers.Found, len(queries))
	for k, q := range queries {
		found[k] = i.readRecords(ctx, q, inst.FieldPath(k))
	}
	inst.Judge(found)
	if inst.Namespace == "" {
		return
	}
	for _, gvr := range workloadTypes {
		list, err := i.clients.Metadata.Resource(gvr).Namespace(inst.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return
		}
		for _, w := range list.Items {
			if inst.Same(w.Labels, w.Annotations) {
				inst.Workloads = append(inst.Workloads, gvr.Resource[:len(gvr.Resource)-1]+"/"+w.Name)
			}
		}
	}
	inst.WorkloadsRead = true
}

// readRecords reads one query: by name (whole, for a status field) or by
// selector (metadata: a Helm record's data is the release itself). A type
// that is not served has no records.
func (i *Inspector) readRecords(ctx context.Context, q installers.Query, field []string) installers.Found {
	if q.Name != "" {
		obj, err := i.clients.Dynamic.Resource(q.Resource).Namespace(q.Namespace).Get(ctx, q.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return installers.Found{}
		case err != nil:
			return installers.Found{Unreadable: err}
		}
		value := ""
		if field != nil {
			value, _, _ = unstructured.NestedString(obj.Object, field...)
		}
		return installers.Found{Records: []installers.Seen{{Name: obj.GetName(), Labels: obj.GetLabels(), Field: value, Deleting: obj.GetDeletionTimestamp() != nil}}}
	}
	list, err := i.clients.Metadata.Resource(q.Resource).Namespace(q.Namespace).List(ctx, metav1.ListOptions{LabelSelector: q.Selector})
	switch {
	case apierrors.IsNotFound(err):
		return installers.Found{}
	case err != nil:
		return installers.Found{Unreadable: err}
	}
	var out installers.Found
	for _, r := range list.Items {
		out.Records = append(out.Records, installers.Seen{Name: r.Name, Labels: r.Labels, Deleting: r.DeletionTimestamp != nil})
	}
	return out
}
