package gateway

import (
	_ "embed"
	"net/http"
)

// OpenAPI is the OpenAPI 3.1 document of the HTTP API (openapi.json).
//
//go:embed openapi.json
var OpenAPI []byte

func (g *Gateway) handleOpenAPI(w http.ResponseWriter, _ *http.Request, _ *conn) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	_, _ = w.Write(OpenAPI)
	return nil
}
