package restore

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ns-doctor/ns-doctor/internal/backup"
)

// nameLabel is the label the API server sets on every namespace to its
// name: a clone's is its own.
const nameLabel = "kubernetes.io/metadata.name"

// namespace creates the namespace to restore into, with the saved one's
// labels and annotations, unless it is there: a restore run again goes on
// into it. One being deleted refuses every create: that is an error.
func (r *Restorer) namespace(ctx context.Context, f *backup.Folder, into string) (created bool, err error) {
	ns, err := r.Clients.Kube.CoreV1().Namespaces().Get(ctx, into, metav1.GetOptions{})
	switch {
	case err == nil && ns.DeletionTimestamp != nil:
		return false, fmt.Errorf("%w: %s is being deleted; see what holds it with 'kubectl ns-doctor explain %s'", ErrStillTerminating, into, into)
	case err == nil:
		return false, nil
	case !apierrors.IsNotFound(err):
		return false, fmt.Errorf("reading namespace %s: %w", into, err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace"}}
	obj.SetName(into)
	labels := f.Namespace.GetLabels()
	delete(labels, nameLabel)
	obj.SetLabels(labels)
	obj.SetAnnotations(f.Namespace.GetAnnotations())
	opts := metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	if _, err := r.Clients.Dynamic.Resource(corev1.SchemeGroupVersion.WithResource("namespaces")).Apply(ctx, into, obj, opts); err != nil {
		return false, fmt.Errorf("creating namespace %s: %w", into, err)
	}
	return true, nil
}
