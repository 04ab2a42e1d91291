package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// JSON-RPC 2.0 error codes, and the A2A codes above them.
const (
	CodeParseError          = -32700
	CodeInvalidRequest      = -32600
	CodeMethodNotFound      = -32601
	CodeInvalidParams       = -32602
	CodeInternal            = -32603
	CodeTaskNotFound        = -32001
	CodeTaskNotCancelable   = -32002
	CodePushNotSupported    = -32003
	CodeUnsupported         = -32004
	CodeContentType         = -32005
	CodeInvalidAgentReply   = -32006
	CodeExtendedCard        = -32007
	CodeVersionNotSupported = -32009
)

// The JSON-RPC methods of A2A 1.0 that the handler serves.
const (
	MethodSendMessage          = "SendMessage"
	MethodSendStreamingMessage = "SendStreamingMessage"
	MethodGetTask              = "GetTask"
	MethodCancelTask           = "CancelTask"
)

// Request is a decoded JSON-RPC 2.0 request. ID is the raw id (a string, an
// integer or null), echoed in the response.
type Request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// Response is a JSON-RPC 2.0 response: Result or Error.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// RPCError is a JSON-RPC error object. Errors of A2A's own codes carry a
// google.rpc.ErrorInfo in Data, as the protocol asks.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// Is matches the sentinel of e's code, so errors.Is(err, ErrTaskNotFound)
// holds for an error a remote agent answered.
func (e *RPCError) Is(target error) bool {
	for sentinel, code := range sentinelCodes {
		if target == sentinel && e.Code == code {
			return true
		}
	}
	return false
}

var sentinelCodes = map[error]int{
	ErrInvalidRequest:    CodeInvalidRequest,
	ErrInvalidParams:     CodeInvalidParams,
	ErrTaskNotFound:      CodeTaskNotFound,
	ErrTaskNotCancelable: CodeTaskNotCancelable,
	ErrUnsupported:       CodeUnsupported,
	ErrVersion:           CodeVersionNotSupported,
	ErrContentType:       CodeContentType,
	errMethod:            CodeMethodNotFound,
}

// reasons are the ErrorInfo reasons of the A2A codes.
var reasons = map[int]string{
	CodeInvalidParams:       "INVALID_PARAMS",
	CodeTaskNotFound:        "TASK_NOT_FOUND",
	CodeTaskNotCancelable:   "TASK_NOT_CANCELABLE",
	CodePushNotSupported:    "PUSH_NOTIFICATION_NOT_SUPPORTED",
	CodeUnsupported:         "UNSUPPORTED_OPERATION",
	CodeContentType:         "CONTENT_TYPE_NOT_SUPPORTED",
	CodeExtendedCard:        "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
	CodeVersionNotSupported: "VERSION_NOT_SUPPORTED",
}

// newRPCError returns an error object of code with message, with the
// ErrorInfo detail when code is one of A2A's.
func newRPCError(code int, message string) *RPCError {
	e := &RPCError{Code: code, Message: message}
	if r, ok := reasons[code]; ok {
		e.Data = []map[string]any{{
			"@type":  "type.googleapis.com/google.rpc.ErrorInfo",
			"reason": r,
			"domain": "a2a-protocol.org",
		}}
	}
	return e
}

// rpcErrorOf maps err onto the JSON-RPC error a client sees: the code of
// the sentinel it wraps, else an internal error.
func rpcErrorOf(err error) *RPCError {
	var re *RPCError
	if errors.As(err, &re) {
		return re
	}
	for sentinel, code := range sentinelCodes {
		if errors.Is(err, sentinel) {
			return newRPCError(code, err.Error())
		}
	}
	return newRPCError(CodeInternal, err.Error())
}

// DecodeRequest decodes one JSON-RPC 2.0 request object from body. On
// failure it returns the error object to answer with (parse error or
// invalid request) and whatever id it could read, null otherwise. Batches
// are refused: A2A calls are single requests.
func DecodeRequest(body []byte) (Request, *RPCError) {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		return Request{ID: nullID}, newRPCError(CodeInvalidRequest, "JSON-RPC batches are not supported: send one request object per HTTP request")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		msg := "the body is not a JSON object"
		if err != nil {
			msg = "the body is not JSON: " + err.Error()
		}
		return Request{ID: nullID}, newRPCError(CodeParseError, msg)
	}
	req := Request{ID: nullID}
	if id, ok := raw["id"]; ok {
		if !validID(id) {
			return req, newRPCError(CodeInvalidRequest, fmt.Sprintf("id %s must be a string, an integer or null", clip(string(id))))
		}
		req.ID = id
	}
	if err := json.Unmarshal(raw["jsonrpc"], &req.JSONRPC); err != nil || req.JSONRPC != "2.0" {
		return req, newRPCError(CodeInvalidRequest, fmt.Sprintf(`jsonrpc is %s: it must be the string "2.0"`, clip(string(raw["jsonrpc"]))))
	}
	if err := json.Unmarshal(raw["method"], &req.Method); err != nil || req.Method == "" {
		return req, newRPCError(CodeInvalidRequest, fmt.Sprintf("method is %s: name one of %s, %s, %s, %s",
			clip(string(raw["method"])), MethodSendMessage, MethodSendStreamingMessage, MethodGetTask, MethodCancelTask))
	}
	if p, ok := raw["params"]; ok {
		p = bytes.TrimSpace(p)
		if len(p) == 0 || p[0] != '{' {
			return req, newRPCError(CodeInvalidParams, fmt.Sprintf("params is %s: A2A params are an object", clip(string(p))))
		}
		req.Params = p
	}
	return req, nil
}

var nullID = json.RawMessage("null")

// validID reports whether id is a JSON string, an integer or null.
func validID(id json.RawMessage) bool {
	var v any
	if err := json.Unmarshal(id, &v); err != nil {
		return false
	}
	switch x := v.(type) {
	case nil, string:
		return true
	case float64:
		return x == math.Trunc(x) && !bytes.ContainsAny(id, ".eE")
	}
	return false
}

// decodeParams decodes a request's params into dst, reporting unknown or
// mistyped fields as invalid params.
func decodeParams(req Request, dst any) error {
	if len(req.Params) == 0 {
		return fmt.Errorf("%w: %s needs params", ErrInvalidParams, req.Method)
	}
	if err := json.Unmarshal(req.Params, dst); err != nil {
		return fmt.Errorf("%w: the params of %s do not decode: %v", ErrInvalidParams, req.Method, err)
	}
	return nil
}

func clip(s string) string {
	if s == "" {
		return "missing"
	}
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
