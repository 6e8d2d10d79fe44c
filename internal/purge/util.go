package purge

import (
	"fmt"
	"path"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/kube"
)

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

func resourceName(gvr schema.GroupVersionResource) string { return kube.ResourceName(gvr) }

// matchFinalizers returns the finalizers of an object to strip: all of
// them, or those matching a pattern (path.Match globs, e.g. "example.com/*").
func matchFinalizers(finalizers, patterns []string, all bool) []string {
	var out []string
	for _, f := range finalizers {
		if all {
			out = append(out, f)
			continue
		}
		for _, p := range patterns {
			if ok, _ := path.Match(p, f); ok {
				out = append(out, f)
				break
			}
		}
	}
	return out
}

func without(list, drop []string) []string {
	skip := map[string]bool{}
	for _, d := range drop {
		skip[d] = true
	}
	out := []string{}
	for _, x := range list {
		if !skip[x] {
			out = append(out, x)
		}
	}
	return out
}
