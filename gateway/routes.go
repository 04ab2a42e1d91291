package gateway

import "net/http"

// route is one endpoint of the API: its method and path (an http.ServeMux
// pattern, written as the path appears in openapi.json) and its handler.
// A public route needs no bearer token; body is the request body it takes
// (by media type); a stream (an event stream, which EventSource opens
// without headers) may carry its token as ?access_token=.
type route struct {
	method, path string
	h            handlerFunc
	public       bool
	body         bodyKind
	stream       bool
}

// handlerFunc serves one API request as the identity of c. A returned error
// is written as the JSON error answer (see writeError); a handler that has
// started its answer returns nil.
type handlerFunc func(w http.ResponseWriter, r *http.Request, c *conn) error

// apiRoutes is every route of the API. The OpenAPI document lists exactly
// these paths and methods (a test checks both ways).
func (g *Gateway) apiRoutes() []route {
	return []route{
		{method: "GET", path: "/api/openapi.json", h: g.handleOpenAPI, public: true},
		{method: "GET", path: "/api/agents", h: g.handleAgents},
		{method: "GET", path: "/api/agents/{name}", h: g.handleAgent},
		{method: "POST", path: "/api/agents/{name}/tasks", h: g.handleTask, body: bodyJSON},
		{method: "GET", path: "/api/agents/{name}/tasks/{id}", h: g.handleTaskResult},
		{method: "POST", path: "/api/chat", h: g.handleChat, body: bodyJSON},
		{method: "GET", path: "/api/conversations", h: g.handleConversations},
		{method: "GET", path: "/api/conversations/{id}", h: g.handleConversation},
		{method: "GET", path: "/api/conversations/{id}/events", h: g.handleConversationEvents, stream: true},
		{method: "POST", path: "/api/pipelines", h: g.handleSubmit, body: bodyPipeline},
		{method: "POST", path: "/api/pipelines/validate", h: g.handleValidate, body: bodyPipeline},
		{method: "GET", path: "/api/runs", h: g.handleRuns},
		{method: "GET", path: "/api/runs/{id}", h: g.handleRun},
		{method: "GET", path: "/api/runs/{id}/events", h: g.handleRunEvents, stream: true},
		{method: "GET", path: "/api/runs/{id}/graph", h: g.handleRunGraph},
		{method: "POST", path: "/api/runs/{id}/cancel", h: g.handleCancel},
		{method: "POST", path: "/api/runs/{id}/fork", h: g.handleFork, body: bodyJSON},
		{method: "POST", path: "/api/runs/{id}/steps/{step}/approve", h: g.handleApprove, body: bodyJSON},
		{method: "POST", path: "/api/runs/{id}/steps/{step}/input", h: g.handleInput, body: bodyJSON},
		{method: "GET", path: "/api/files", h: g.handleFiles},
		{method: "POST", path: "/api/files", h: g.handlePutFile, body: bodyUpload},
		{method: "GET", path: "/api/files/{id}", h: g.handleFile},
		{method: "GET", path: "/api/files/{id}/content", h: g.handleFileContent},
		{method: "GET", path: "/api/memory", h: g.handleMemory},
		{method: "POST", path: "/api/memory/{identity}/{id}/forget", h: g.handleForget},
		{method: "GET", path: "/api/events", h: g.handleEvents, stream: true},
		// A webhook's signature is its authentication: no bearer token, any media type.
		{method: "POST", path: "/api/hooks/{name}", h: g.handleHook, public: true},
	}
}
