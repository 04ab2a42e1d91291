// Package llm is the mesh's seam to a chat model: Model, with requests and
// answers in the mesh's own types (messages, tools, tool calls, structured
// output, usage) and a streaming form. Client implements it for the
// configured provider, an OpenAI-compatible endpoint (OpenAI, Ollama, vLLM,
// llama.cpp), Anthropic's Messages API or the Gemini API, with retries on 429 and 5xx
// honouring Retry-After, a timeout per attempt, tracing, and token and cost
// accounting per call. Tools travel per request, so a Client is never
// mutated. See docs/llm.md.
package llm
