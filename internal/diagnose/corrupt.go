package diagnose

import (
	"path"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
)

// Objects the API server cannot read from storage: their data cannot be
// decrypted (a lost KMS key, a changed encryption config) or decoded. A
// list of their type fails, so the controller can neither count nor delete
// them. KEP-3926 gives a way out: with kube-apiserver's feature gate
// AllowUnsafeMalformedObjectDeletion on (alpha since 1.32, off by default
// through 1.36), the failed list names each such object (reason
// StoreReadError) and a DELETE with ignoreStoreReadErrorWithClusterBreakingPotential
// removes it from storage, finalizers and admission skipped; it needs the
// verb unsafe-delete-ignore-read-errors on the resource besides delete.

// Corrupt is what a failed list says of objects it could not read.
type Corrupt struct {
	// Names are the objects the server named (its gate is on); empty
	// when it did not say which.
	Names []string
	// More counts the names past the first MaxExamples.
	More int
	// Path is the type's API path in the namespace, for the unsafe DELETE.
	Path string
	// Key is the storage key the server's error named (its value
	// transformer's words, the gate off): the object is known, though
	// the server does not list it.
	Key string
}

// keyedObject names the object of namespace the one storage key a storage
// error quotes is for (`unable to transform key
// "/registry/secrets/team-a/creds": ...`): its last two parts are the
// namespace and the name.
func keyedObject(keys []string, namespace string) (key, name string, ok bool) {
	if len(keys) != 1 {
		return "", "", false
	}
	parts := strings.Split(keys[0], "/")
	if len(parts) < 5 || parts[len(parts)-2] != namespace || parts[len(parts)-1] == "" {
		return "", "", false
	}
	return keys[0], parts[len(parts)-1], true
}

// corruptOf reads a list error for objects that cannot be read, nil if
// that is not its cause. served says the API server serves the type from
// its own storage (no aggregated API, no conversion webhook): a 500 from
// such a list is what storage holds failing to decode, whatever the
// decoder's words (with the gate off they are only the decoder's).
func corruptOf(err error, gvr schema.GroupVersionResource, namespace string, served bool) *Corrupt {
	if err == nil {
		return nil
	}
	c := &Corrupt{Path: apiPath(gvr, namespace)}
	e := apierror.Classify(err)
	switch {
	case e.Kind == apierror.StoreReadError && e.Reason == metav1.StatusReasonStoreReadError:
		// With the gate on, the server names each object: the unsafe
		// DELETE needs that gate, so only then are the objects named.
		for _, key := range e.Keys {
			c.Names = append(c.Names, path.Base(key))
		}
		c.Names, c.More = firstN(c.Names, MaxExamples)
		return c
	case e.Kind == apierror.StoreReadError:
		// With the gate off, a value transformer's failure may quote the
		// key of the object it could not read: that object, by its key.
		if key, name, ok := keyedObject(e.Keys, namespace); ok {
			c.Key, c.Names = key, []string{name}
		}
		return c
	case served && e.Kind == apierror.ServerError:
		return c
	}
	return nil
}

// apiPath is where a type's objects in a namespace are served.
func apiPath(gvr schema.GroupVersionResource, namespace string) string {
	if gvr.Group == "" {
		return "/api/" + gvr.Version + "/namespaces/" + namespace + "/" + gvr.Resource
	}
	return "/apis/" + gvr.Group + "/" + gvr.Version + "/namespaces/" + namespace + "/" + gvr.Resource
}

// corruptActions: with the objects named, the unsafe DELETE of each; else
// turning the gate on, which names them.
func corruptActions(namespace string, c *Corrupt) []Action {
	if len(c.Names) == 0 {
		return []Action{{Kind: ActionEnableUnsafeDelete, Namespace: namespace, Target: c.Path}}
	}
	if c.Key != "" {
		// Named by its key, the gate off: the unsafe DELETE once the gate
		// is on, or the key's removal from etcd itself.
		return []Action{{Kind: ActionEnableUnsafeDelete, Namespace: namespace, Target: c.Path},
			{Kind: ActionUnsafeDelete, Namespace: namespace, Target: c.Path + "/" + c.Names[0]},
			{Kind: ActionEtcdDelete, Namespace: namespace, Target: c.Key}}
	}
	var out []Action
	for _, name := range c.Names {
		out = append(out, Action{Kind: ActionUnsafeDelete, Namespace: namespace, Target: c.Path + "/" + name})
	}
	return out
}
