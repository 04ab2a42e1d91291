// Package httpguard holds the checks every HTTP surface of the mesh that a
// browser can reach makes before it serves a request: the Host a request
// names (against DNS rebinding) and where a state-changing request comes
// from (against cross-site request forgery). The gateway and the HTTP
// listeners of the MCP and A2A bridges use it, so they refuse the same
// requests.
package httpguard
