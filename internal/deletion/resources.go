package deletion

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// FinalizerToken is the spec.finalizers token the namespace controller
// owns and removes.
const FinalizerToken = v1.FinalizerKubernetes

// PodsGVR is the resource upstream deletes first under ordered deletion.
var PodsGVR = schema.GroupVersionResource{Group: "", Version: "v1", Resource: "pods"}

// ResourceName renders a resource the way kubectl accepts it: pods,
// widgets.example.com.
func ResourceName(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource
	}
	return gvr.Resource + "." + gvr.Group
}
