// Package docs ships some of ns-doctor's pages inside the binary, read from
// these files at build time (never copied, so never stale): each blocker
// kind's page, which `kubectl ns-doctor mcp` serves to agents as resources.
package docs

import "embed"

// Blockers holds blockers/*.md: a page per blocker kind, and the index.
//
//go:embed blockers/*.md
var Blockers embed.FS
