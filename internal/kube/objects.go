package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

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

// ObjectReader reads objects in full, as JSON.
type ObjectReader interface {
	// EachObjectJSON pages through the full objects of gvr in namespace,
	// pageSize at a time, and calls fn with each one as the API server
	// sent it (JSON), with the apiVersion and kind its list names: items
	// of built-in types carry none of their own.
	EachObjectJSON(ctx context.Context, gvr schema.GroupVersionResource, namespace string, pageSize int64,
		fn func(raw []byte, apiVersion, kind string) error) error
}

// restObjects reads through a raw REST client. Nothing is decoded beyond
// each page's envelope, so a caller that only writes the objects somewhere
// pays for no maps, and holds one page at a time.
type restObjects struct{ c *Clients }

func (r restObjects) EachObjectJSON(ctx context.Context, gvr schema.GroupVersionResource, namespace string, pageSize int64,
	fn func(raw []byte, apiVersion, kind string) error) error {
	client, err := r.c.sweepREST()
	if err != nil {
		return err
	}
	path := []string{"/apis", gvr.Group, gvr.Version}
	if gvr.Group == "" {
		path = []string{"/api", gvr.Version}
	}
	path = append(path, "namespaces", namespace, gvr.Resource)
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
