package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// rawClientFor is a REST client that asks for JSON and hands the answer
// over undecoded, for any path.
func rawClientFor(cfg *rest.Config) (*rest.RESTClient, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return rest.UnversionedRESTClientFor(cfg)
}

// objectPage is one answer of a paged list, its items left as the API
// server wrote them.
type objectPage struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Continue string `json:"continue"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

// Collections reads a resource's objects in full and deletes whole
// collections, streaming what the typed clients would hold in memory and
// decode: a purge's backup reads every object once, and a deletecollection
// answers with every object it deleted.
type Collections interface {
	// EachObjectJSON pages through the full objects of gvr in namespace,
	// pageSize at a time, and calls fn with each one as the API server
	// sent it (JSON), with the apiVersion and kind its list names: items
	// of built-in types carry none of their own.
	EachObjectJSON(ctx context.Context, gvr schema.GroupVersionResource, namespace string, pageSize int64,
		fn func(raw []byte, apiVersion, kind string) error) error
	// DeleteCollection deletes every object of gvr in namespace.
	DeleteCollection(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.DeleteOptions) error
}

// restCollections sends them through a raw REST client. Nothing is
// decoded beyond each list page's envelope, so the backup pays for no maps
// and holds one page at a time.
type restCollections struct{ c *Clients }

// collectionPath is the URL path of gvr's objects in namespace.
func collectionPath(gvr schema.GroupVersionResource, namespace string) []string {
	path := []string{"/apis", gvr.Group, gvr.Version}
	if gvr.Group == "" {
		path = []string{"/api", gvr.Version}
	}
	return append(path, "namespaces", namespace, gvr.Resource)
}

func (r restCollections) EachObjectJSON(ctx context.Context, gvr schema.GroupVersionResource, namespace string, pageSize int64,
	fn func(raw []byte, apiVersion, kind string) error) error {
	client, err := r.c.sweepREST()
	if err != nil {
		return err
	}
	path := collectionPath(gvr, namespace)
	token := ""
	for {
		req := client.Get().AbsPath(path...).Param("limit", strconv.FormatInt(pageSize, 10))
		if token != "" {
			req = req.Param("continue", token)
		}
		// Do, not DoRaw: Error reads an error answer as the Status it
		// holds, with the server's message (an aggregated API's own).
		res := req.Do(ctx)
		if err := res.Error(); err != nil {
			return err
		}
		body, err := res.Raw()
		if err != nil {
			return err
		}
		var page objectPage
		if err := json.Unmarshal(body, &page); err != nil {
			return fmt.Errorf("reading a page of %s: %w", gvr.Resource, err)
		}
		kind := strings.TrimSuffix(page.Kind, "List")
		for _, item := range page.Items {
			if err := fn(item, page.APIVersion, kind); err != nil {
				return err
			}
		}
		if token = page.Metadata.Continue; token == "" {
			return nil
		}
	}
}

// deletedAsMetadata asks a deletecollection to answer with the metadata of
// what it deleted (protobuf where the server offers it), not every object
// in full: the answer is not read, and the API server serializes less.
const deletedAsMetadata = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," +
	"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"

// DeleteCollection sends the same request as the metadata client's
// DeleteCollection (the options in the body), asking for a smaller answer,
// which it streams away instead of holding: for a type of 100,000 objects
// the full answer is tens of MiB.
func (r restCollections) DeleteCollection(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.DeleteOptions) error {
	client, err := r.c.sweepREST()
	if err != nil {
		return err
	}
	body, err := json.Marshal(&opts)
	if err != nil {
		return err
	}
	answer, err := client.Delete().AbsPath(collectionPath(gvr, namespace)...).SetHeader("Accept", deletedAsMetadata).Body(body).Stream(ctx)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, answer)
	if cerr := answer.Close(); err == nil {
		err = cerr
	}
	return err
}
