package mcp

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmesh/agentmesh/resolvers"
)

// FileURIPrefix starts the URI of a stored file's resource:
// agentmesh://files/<id>.
const FileURIPrefix = "agentmesh://files/"

// resourcePage is how many files one resources/list page holds.
const resourcePage = 100

// maxResourceBytes bounds a file read as a resource (16 MiB).
const maxResourceBytes = 16 << 20

// addResources serves the object store's files: resources/list pages
// through them (a receiving middleware, since the SDK lists only resources
// added one by one) and a template reads any of them by id.
func (s *Server) addResources() {
	if s.files == nil {
		return
	}
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
		Name:        "file",
		Title:       "A stored file",
		Description: "A file in the mesh's object store, by id; pass ids to agents' FILE_IDS inputs.",
		URITemplate: FileURIPrefix + "{id}",
	}, s.readFile)
	s.mcp.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "resources/list" {
				return next(ctx, method, req)
			}
			cursor := ""
			if p, ok := req.GetParams().(*mcp.ListResourcesParams); ok && p != nil {
				cursor = p.Cursor
			}
			return s.listFiles(ctx, cursor)
		}
	})
}

// listFiles returns the page of files after cursor (the index of the
// first file of the page, as the previous page's nextCursor said).
func (s *Server) listFiles(ctx context.Context, cursor string) (*mcp.ListResourcesResult, error) {
	start := 0
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil || n < 0 {
			return nil, invalidParams("invalid cursor " + strconv.Quote(cursor) + ": pass the nextCursor of the previous page")
		}
		start = n
	}
	out := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}}
	i := 0
	for ref, err := range s.files.List(ctx) {
		if err != nil {
			return nil, err
		}
		if i >= start+resourcePage {
			out.NextCursor = strconv.Itoa(i)
			break
		}
		if i >= start {
			name := ref.Filename
			if name == "" {
				name = ref.ID
			}
			out.Resources = append(out.Resources, &mcp.Resource{
				URI: FileURIPrefix + ref.ID, Name: name, MIMEType: ref.MediaType, Size: ref.Size,
				Description: "stored file " + ref.ID,
			})
		}
		i++
	}
	return out, nil
}

// readFile returns a file's content: text for text/* and JSON files that
// are valid UTF-8, else a blob.
func (s *Server) readFile(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id, ok := strings.CutPrefix(uri, FileURIPrefix)
	if !ok || id == "" {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	rc, ref, err := s.files.Open(ctx, id)
	if err != nil {
		if errors.Is(err, resolvers.ErrNotFound) || errors.Is(err, resolvers.ErrInvalidID) {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxResourceBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxResourceBytes {
		return nil, invalidParams("file " + id + " is larger than 16 MiB; fetch it with 'agentmesh files get " + id + "'")
	}
	c := &mcp.ResourceContents{URI: uri, MIMEType: ref.MediaType}
	if isText(ref.MediaType) && utf8.Valid(data) {
		c.Text = string(data)
	} else {
		c.Blob = data
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
}

func isText(mediaType string) bool {
	mt, _, _ := strings.Cut(mediaType, ";")
	mt = strings.TrimSpace(mt)
	return strings.HasPrefix(mt, "text/") || mt == "application/json" || strings.HasSuffix(mt, "+json") || mt == "application/yaml"
}

// invalidParams is a JSON-RPC invalid-params error (-32602).
func invalidParams(msg string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
}
