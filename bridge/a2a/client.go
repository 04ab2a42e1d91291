package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
)

// Client calls one remote A2A agent over the JSON-RPC binding of A2A 1.0,
// or of 0.3 when that is all the agent offers.
type Client struct {
	hc       *http.Client
	endpoint string
	card     AgentCard
	legacy   bool // the agent speaks A2A 0.3 only
	nextID   atomic.Int64
}

// cardURL is where the card of the agent at u is: u itself when it names a
// .json file, else the well-known path below u.
func cardURL(u string) (string, error) {
	base, err := url.Parse(u)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return "", fmt.Errorf("%w: %q is not an http(s) URL of an agent or its card", ErrNoCard, u)
	}
	if strings.HasSuffix(base.Path, ".json") {
		return base.String(), nil
	}
	if !strings.HasSuffix(base.Path, "/") {
		base.Path += "/"
	}
	return base.ResolveReference(&url.URL{Path: WellKnownCard}).String(), nil
}

// Dial fetches the agent card at u (an agent's base URL or its card's URL)
// and returns a client for its JSON-RPC interface of A2A 1.0. hc nil means
// http.DefaultClient.
func Dial(ctx context.Context, hc *http.Client, u string) (*Client, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	cu, err := cardURL(u)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cu, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoCard, err)
	}
	req.Header.Set(HeaderVersion, ProtocolVersion)
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: fetching %s: %v", ErrNoCard, cu, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("%w: reading %s: %v", ErrNoCard, cu, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: GET %s: %s: %s", ErrNoCard, cu, resp.Status, clip(strings.TrimSpace(string(body))))
	}
	card, endpoint, legacy, err := parseCard(body)
	if err != nil {
		return nil, fmt.Errorf("%w: the card at %s: %v", ErrNoCard, cu, err)
	}
	ep, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("%w: interface URL %q: %v", ErrNoCard, endpoint, err)
	}
	if !ep.IsAbs() { // a relative URL is taken relative to the card
		base, _ := url.Parse(cu)
		endpoint = base.ResolveReference(ep).String()
	}
	return &Client{hc: hc, endpoint: endpoint, card: card, legacy: legacy}, nil
}

// parseCard reads an agent card and picks its JSON-RPC interface: of A2A
// 1.0 when it has one, else of 0.3 (legacy). A card in 0.3 form (url and
// preferredTransport instead of supportedInterfaces) is read too, and
// returned in 1.0 form.
func parseCard(body []byte) (card AgentCard, endpoint string, legacy bool, err error) {
	var shape struct {
		SupportedInterfaces  []AgentInterface `json:"supportedInterfaces"`
		URL                  string           `json:"url"`
		PreferredTransport   string           `json:"preferredTransport"`
		AdditionalInterfaces []iface03        `json:"additionalInterfaces"`
	}
	if err := json.Unmarshal(body, &shape); err != nil {
		return card, "", false, fmt.Errorf("not an agent card: %v", err)
	}
	if err := json.Unmarshal(body, &card); err != nil && len(shape.SupportedInterfaces) > 0 {
		return card, "", false, fmt.Errorf("not an agent card: %v", err)
	}
	if len(shape.SupportedInterfaces) == 0 && shape.URL != "" { // 0.3 form
		var c03 card03
		if err := json.Unmarshal(body, &c03); err != nil {
			return card, "", false, fmt.Errorf("not an A2A 0.3 agent card: %v", err)
		}
		card = AgentCard{Name: c03.Name, Description: c03.Description, Version: c03.Version, Provider: c03.Provider,
			Capabilities: AgentCapabilities{Streaming: c03.Capabilities.Streaming}, DefaultInputModes: c03.DefaultInputModes,
			DefaultOutputModes: c03.DefaultOutputModes, Skills: c03.Skills}
		if t := shape.PreferredTransport; t == "" || strings.EqualFold(t, BindingJSONRPC) {
			card.SupportedInterfaces = append(card.SupportedInterfaces, AgentInterface{URL: shape.URL, ProtocolBinding: BindingJSONRPC, ProtocolVersion: LegacyVersion})
		}
		for _, in := range shape.AdditionalInterfaces {
			card.SupportedInterfaces = append(card.SupportedInterfaces, AgentInterface{URL: in.URL, ProtocolBinding: in.Transport, ProtocolVersion: LegacyVersion})
		}
	}
	var seen []string
	for _, in := range card.SupportedInterfaces {
		seen = append(seen, in.ProtocolBinding+" "+in.ProtocolVersion)
		if !strings.EqualFold(in.ProtocolBinding, BindingJSONRPC) {
			continue
		}
		switch {
		case in.ProtocolVersion == ProtocolVersion && (endpoint == "" || legacy):
			endpoint, legacy = in.URL, false
		case isLegacy(in.ProtocolVersion) && endpoint == "":
			endpoint, legacy = in.URL, true
		}
	}
	if endpoint == "" {
		return card, "", false, fmt.Errorf("no %s interface of A2A %s or %s (it offers %v)", BindingJSONRPC, ProtocolVersion, LegacyVersion, seen)
	}
	return card, endpoint, legacy, nil
}

// Card returns the agent card the client was made from.
func (c *Client) Card() AgentCard { return c.card }

// Endpoint returns the JSON-RPC URL the client calls.
func (c *Client) Endpoint() string { return c.endpoint }

// Version returns the A2A version the client speaks to the agent.
func (c *Client) Version() string {
	if c.legacy {
		return LegacyVersion
	}
	return ProtocolVersion
}

// SendMessage sends a message and returns the task or message answered.
func (c *Client) SendMessage(ctx context.Context, p SendMessageRequest) (SendMessageResponse, error) {
	var res SendMessageResponse
	err := c.call(ctx, MethodSendMessage, p, &res)
	if err == nil && res.Task == nil && res.Message == nil {
		err = fmt.Errorf("%w: %s answered neither a task nor a message", ErrRemote, MethodSendMessage)
	}
	return res, err
}

// GetTask returns the task id.
func (c *Client) GetTask(ctx context.Context, id string) (Task, error) {
	var t Task
	return t, c.call(ctx, MethodGetTask, GetTaskRequest{ID: id}, &t)
}

// CancelTask asks the agent to cancel task id.
func (c *Client) CancelTask(ctx context.Context, id string) (Task, error) {
	var t Task
	return t, c.call(ctx, MethodCancelTask, CancelTaskRequest{ID: id}, &t)
}

// call makes one JSON-RPC call; an error answer is an *RPCError.
func (c *Client) call(ctx context.Context, method string, params, result any) error {
	if c.legacy {
		return c.callLegacy(ctx, method, params, result)
	}
	return c.roundTrip(ctx, ProtocolVersion, method, params, result)
}

// roundTrip posts one JSON-RPC request in version and decodes its result.
func (c *Client) roundTrip(ctx context.Context, version, method string, params, result any) error {
	id := c.nextID.Add(1)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set(HeaderVersion, version)
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %s %s: %v", ErrRemote, method, c.endpoint, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%w: %s: reading the answer: %v", ErrRemote, method, err)
	}
	var out struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   *RPCError       `json:"error"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.JSONRPC != "2.0" {
		return fmt.Errorf("%w: %s answered HTTP %s with no JSON-RPC 2.0 response: %s", ErrRemote, method, resp.Status, clip(strings.TrimSpace(string(raw))))
	}
	if out.Error != nil {
		return fmt.Errorf("%w: %s: %w", ErrRemote, method, out.Error)
	}
	if string(out.ID) != fmt.Sprint(id) {
		return fmt.Errorf("%w: %s answered id %s to request id %d", ErrRemote, method, out.ID, id)
	}
	if err := json.Unmarshal(out.Result, result); err != nil {
		return fmt.Errorf("%w: %s: the result does not decode: %v", ErrRemote, method, err)
	}
	return nil
}
