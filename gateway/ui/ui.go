// Package ui is the dashboard the gateway serves at /: hand-written HTML,
// CSS and JavaScript embedded in the binary, with no build step and nothing
// fetched from elsewhere, so it works on a mesh with no Internet. It reads
// everything from the gateway's /api and follows changes by server-sent
// events.
package ui

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed index.html *.css *.js
var files embed.FS

// Files are the dashboard's static files (index.html at the root).
func Files() fs.FS { return files }

// Handler serves the dashboard: index.html at / and the scripts and style
// beside it, never cached for long, as a new binary brings new files.
func Handler() http.Handler {
	fsrv := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; connect-src 'self'")
		fsrv.ServeHTTP(w, r)
	})
}
