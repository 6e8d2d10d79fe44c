package kube

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
)

func cachedObject(ns, name string, finalizers ...string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: finalizers, Annotations: map[string]string{"big": "dropped"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
	}
}

// The cache answers a sweep from its informers once synced, in the API's
// order (namespace, then name), trimmed as a sweep trims (managed fields
// kept only where finalizers are), tells who watches what changed, and
// keeps the Warning events by namespace.
func TestMetadataCacheAnswersSweeps(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	meta := metadatafake.NewSimpleMetadataClient(scheme,
		cachedObject("b", "z"), cachedObject("a", "y", "example.com/hold"), cachedObject("a", "x"))
	kube := fake.NewClientset(&v1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "e"}, Type: v1.EventTypeWarning, Reason: "Failed"})
	m := NewMetadataCache(ctx, &Clients{Metadata: meta, Kube: kube})
	changed := make(chan struct{}, 8)
	if err := m.Notify([]schema.GroupVersionResource{cmGVR}, func() { changed <- struct{}{} }); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		synced, watched := m.Synced()
		_, events := m.Warnings("a")
		return synced == watched && watched == 1 && events, nil
	}); err != nil {
		t.Fatalf("never synced: %v", err)
	}
	all := Sweep(ctx, m.Clients(), "", []schema.GroupVersionResource{cmGVR}, SweepOptions{})
	var got []string
	for _, o := range all.Items[cmGVR].Items {
		got = append(got, o.Namespace+"/"+o.Name)
	}
	held, _ := m.objects(cmGVR, "a")
	for _, o := range held {
		if o.Annotations != nil || (len(o.Finalizers) == 0) != (o.ManagedFields == nil) {
			t.Errorf("the cache kept of %s/%s annotations %v and managed fields %v", o.Namespace, o.Name, o.Annotations, o.ManagedFields)
		}
	}
	if want := []string{"a/x", "a/y", "b/z"}; !slices.Equal(got, want) {
		t.Errorf("swept %v, want %v", got, want)
	}
	one, err := m.Clients().Metadata.Resource(cmGVR).Namespace("b").List(ctx, metav1.ListOptions{})
	if err != nil || len(one.Items) != 1 || one.Items[0].Name != "z" {
		t.Errorf("b's list: %v, %v", one, err)
	}
	if events, ok := m.Warnings("a"); !ok || len(events) != 1 || events[0].Reason != "Failed" {
		t.Errorf("a's warnings: %v, %v", events, ok)
	}
	if err := meta.Resource(cmGVR).Namespace("b").Delete(ctx, "z", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Error("no change heard after a delete")
	}
}

var cmGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
