package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ns-doctor/ns-doctor/docs"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/finalizers"
)

// Resource addresses: each blocker kind's page (docs/blockers, embedded
// from the files themselves), its index, and the finalizer catalogue.
const (
	BlockersURI       = "ns-doctor://blockers"
	FinalizersURI     = "ns-doctor://finalizers"
	finalizerTemplate = FinalizersURI + "/{+finalizer}"
)

// BlockerURI is the address of a blocker kind's page.
func BlockerURI(kind diagnose.BlockerKind) string { return BlockersURI + "/" + string(kind) }

// FinalizerURI is the address of a finalizer's catalogue entry.
func FinalizerURI(finalizer string) string { return FinalizersURI + "/" + finalizer }

func addResources(srv *sdk.Server) error {
	index, err := fs.ReadFile(docs.Blockers, "blockers/README.md")
	if err != nil {
		return fmt.Errorf("the blockers' index: %w", err)
	}
	srv.AddResource(&sdk.Resource{URI: BlockersURI, Name: "blockers", Title: "Blocker kinds", MIMEType: "text/markdown",
		Description: "Every kind of blocker ns-doctor reports, with a line each"}, fixedText(BlockersURI, "text/markdown", string(index)))
	for _, kind := range diagnose.BlockerKinds() {
		page, err := fs.ReadFile(docs.Blockers, "blockers/"+string(kind)+".md")
		if err != nil {
			return fmt.Errorf("the page of blocker kind %s: %w", kind, err)
		}
		uri := BlockerURI(kind)
		srv.AddResource(&sdk.Resource{URI: uri, Name: string(kind), Title: heading(string(page), string(kind)), MIMEType: "text/markdown",
			Description: fmt.Sprintf("Blocker %s: what it means, how ns-doctor finds it, and the fix", kind)}, fixedText(uri, "text/markdown", string(page)))
	}
	all, err := finalizers.Catalogue()
	if err != nil {
		return err
	}
	list := make([]map[string]string, 0, len(all))
	for _, e := range all {
		list = append(list, map[string]string{"finalizer": e.Finalizer, "owner": e.Owner, "uri": FinalizerURI(e.Finalizer)})
	}
	raw, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return err
	}
	srv.AddResource(&sdk.Resource{URI: FinalizersURI, Name: "finalizers", Title: "Finalizer catalogue", MIMEType: "application/json",
		Description: "The finalizers ns-doctor knows (exact names and globs), with their owner"}, fixedText(FinalizersURI, "application/json", string(raw)))
	srv.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: finalizerTemplate, Name: "finalizer", Title: "A finalizer's catalogue entry", MIMEType: "application/json",
		Description: "Who removes a finalizer, how to see that owner running, what it guards and what stripping it leaks, with the source it was read from"}, finalizerEntry)
	return nil
}

// fixedText serves a fixed text.
func fixedText(uri, mime, body string) sdk.ResourceHandler {
	return func(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: mime, Text: body}}}, nil
	}
}

// finalizerEntry serves the catalogue's entry of a finalizer (an exact
// entry, or the glob that matches it).
func finalizerEntry(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	name, ok := strings.CutPrefix(uri, FinalizersURI+"/")
	if !ok || name == "" {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	e := finalizers.Lookup(name)
	if e == nil {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	raw, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return nil, err
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(raw)}}}, nil
}

// heading is a page's first heading, or def.
func heading(page, def string) string {
	sc := bufio.NewScanner(strings.NewReader(page))
	for sc.Scan() {
		if h, ok := strings.CutPrefix(sc.Text(), "# "); ok {
			return strings.TrimSpace(h)
		}
	}
	return def
}
