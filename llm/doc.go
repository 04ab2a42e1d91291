// Package llm is the mesh's client for any OpenAI-compatible Chat Completions
// endpoint (OpenAI, Ollama, vLLM, llama.cpp): one configured Client, retries on
// 429 and 5xx honouring Retry-After, a timeout per attempt, and token and cost
// accounting per call. Both the orchestrator's chat loop and the built-in
// agents use it; tools travel per request, so a Client is never mutated.
package llm
