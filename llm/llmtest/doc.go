// Package llmtest is scripted model servers for tests, speaking each
// provider's real protocol so the real clients run: New is OpenAI's Chat
// Completions, NewAnthropic Anthropic's Messages API, NewGemini the Gemini
// API, each with its server-sent event stream. Each test scripts the replies (answers, tool
// calls, malformed arguments, 429 with Retry-After, 401, text held back
// mid-stream), and every request is recorded so tests can assert on the
// tools and messages the model was shown.
package llmtest
