package a2a

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/schemas"
)

// Media types the cards announce: text parts, data parts (JSON), and file
// bytes of any type.
const (
	modeText = "text/plain"
	modeJSON = "application/json"
	modeAny  = "application/octet-stream"
)

// interfaces are the card's: JSON-RPC at endpoint, in 1.0 (preferred) and
// in 0.3.
func interfaces(endpoint string) []AgentInterface {
	return []AgentInterface{
		{URL: endpoint, ProtocolBinding: BindingJSONRPC, ProtocolVersion: ProtocolVersion},
		{URL: endpoint, ProtocolBinding: BindingJSONRPC, ProtocolVersion: LegacyVersion},
	}
}

// provider is the card's provider entry for agents served by this bridge.
var provider = &AgentProvider{Organization: "agentmesh", URL: "https://github.com/agentmesh/agentmesh"}

// CardFor returns the agent card of a mesh agent whose JSON-RPC endpoint is
// endpoint: one skill, the agent's operation, whose description says how
// each input is sent (text, data or file parts) and what each output comes
// back as.
func CardFor(c schemas.AgentContract, endpoint string) AgentCard {
	in, out := inputModes(c), outputModes(c)
	version := c.Version
	if version == "" {
		version = "0.0.0"
	}
	return AgentCard{
		Name:                c.Name,
		Description:         c.Description,
		SupportedInterfaces: interfaces(endpoint),
		Provider:            provider,
		Version:             version,
		Capabilities:        AgentCapabilities{Streaming: true},
		DefaultInputModes:   in,
		DefaultOutputModes:  out,
		Skills: []AgentSkill{{
			ID:          c.Name,
			Name:        c.Name,
			Description: skillDescription(c),
			Tags:        skillTags(c),
			InputModes:  in,
			OutputModes: out,
		}},
	}
}

// ChatCard returns the card of the mesh's chat (the orchestrator as an
// agent) at endpoint: one skill, chat, whose description lists the live
// agents the orchestrator may call.
func ChatCard(name, endpoint string, live []client.AgentInfo) AgentCard {
	var b strings.Builder
	b.WriteString("Send a request in plain language; the mesh's orchestrator plans it, calls its agents and answers. ")
	b.WriteString("A message's contextId names the conversation: send the next message with the same contextId to go on.")
	if len(live) > 0 {
		b.WriteString("\n\nAgents it can call now:")
		for _, a := range live {
			fmt.Fprintf(&b, "\n- %s: %s", a.Contract.Name, a.Contract.Description)
		}
	}
	tags := []string{"chat", "orchestrator"}
	for _, a := range live {
		tags = append(tags, strings.ToLower(a.Contract.Capability))
	}
	slices.Sort(tags)
	return AgentCard{
		Name:                name,
		Description:         "An agent mesh: an orchestrator that turns a request into tasks for the mesh's agents and answers in text.",
		SupportedInterfaces: interfaces(endpoint),
		Provider:            provider,
		Version:             "1.0.0",
		Capabilities:        AgentCapabilities{Streaming: true},
		DefaultInputModes:   []string{modeText},
		DefaultOutputModes:  []string{modeText},
		Skills: []AgentSkill{{
			ID:          "chat",
			Name:        "chat",
			Description: b.String(),
			Tags:        slices.Compact(tags),
			Examples:    []string{"Find sunset images and organize them into folders"},
		}},
	}
}

// skillDescription is the contract's description followed by how to send
// each input and what each output is.
func skillDescription(c schemas.AgentContract) string {
	var b strings.Builder
	b.WriteString(c.Description)
	if len(c.Inputs) > 0 {
		b.WriteString("\n\nInputs (a data part {\"<input>\": value, \"params\": {...}} sets any of them):")
		for _, in := range c.Inputs {
			fmt.Fprintf(&b, "\n- %s: %s%s%s", in.Name, in.DataType, hintText(in.ContentTypeHint), requiredText(in.Required))
			if in.Description != "" {
				b.WriteString(": " + in.Description)
			}
			switch in.DataType {
			case schemas.TypeText:
				b.WriteString(" (or a text part)")
			case schemas.TypeFileIDs:
				b.WriteString(" (or file parts with the bytes)")
			}
		}
	}
	if len(c.Outputs) > 0 {
		b.WriteString("\n\nOutputs, one artifact each:")
		for _, out := range c.Outputs {
			fmt.Fprintf(&b, "\n- %s: %s%s", out.Name, out.DataType, hintText(out.ContentTypeHint))
			if out.Description != "" {
				b.WriteString(": " + out.Description)
			}
		}
	}
	if len(c.Params) > 0 {
		fmt.Fprintf(&b, "\n\nParams (JSON Schema): %s", c.Params)
	}
	return b.String()
}

func hintText(h string) string {
	if h == "" {
		return ""
	}
	return " of " + h
}

func requiredText(r bool) string {
	if r {
		return ", required"
	}
	return ""
}

func skillTags(c schemas.AgentContract) []string {
	tags := []string{strings.ToLower(c.Capability)}
	for _, in := range c.Inputs {
		tags = append(tags, strings.ToLower(in.DataType))
	}
	for _, out := range c.Outputs {
		tags = append(tags, strings.ToLower(out.DataType))
	}
	slices.Sort(tags)
	return slices.Compact(tags)
}

func inputModes(c schemas.AgentContract) []string {
	modes := []string{modeText, modeJSON}
	for _, in := range c.Inputs {
		if in.DataType == schemas.TypeFileIDs {
			modes = append(modes, fileMode(in.ContentTypeHint))
		}
	}
	return slices.Compact(modes)
}

func outputModes(c schemas.AgentContract) []string {
	var modes []string
	for _, out := range c.Outputs {
		if out.DataType == schemas.TypeText {
			modes = append(modes, modeText)
		} else {
			modes = append(modes, modeJSON)
		}
	}
	if len(modes) == 0 {
		modes = []string{modeText}
	}
	slices.Sort(modes)
	return slices.Compact(modes)
}

// fileMode is the media type range of a file collection's content hint.
func fileMode(hint string) string {
	switch hint {
	case "images":
		return "image/*"
	case "documents":
		return "text/*"
	}
	return modeAny
}
