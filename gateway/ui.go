package gateway

import (
	"embed"
	"io/fs"
	"net/http"
)

// ui holds the dashboard: static files served at /.
//
//go:embed all:ui
var ui embed.FS

// uiHandler serves the embedded dashboard.
func uiHandler() http.Handler {
	sub, err := fs.Sub(ui, "ui")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return http.FileServerFS(sub)
}
