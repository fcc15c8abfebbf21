package proxy

import (
	"net/http"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/internal/transcript"
)

// UpstreamSummarizer has ctx-summarize write its summaries with the agent's own provider:
// the upstream the request goes to, the client's own credentials, a small model. The
// credentials go to the stage in its environment map, in memory only: never a log line, a
// state file or the store. A model that fails or times out leaves the local summary.
type UpstreamSummarizer struct {
	Model   string        // "" for the summarize stage's default (the provider's small model)
	Timeout time.Duration // the most one summary may take
}

// env is what the stages need to summarize a request r of format with the upstream at
// base, or nil when the request carries no credential to do it with.
func (u *UpstreamSummarizer) env(r *http.Request, format transcript.Format, base string) map[string]string {
	env := map[string]string{
		"CTX_SUMMARIZE_FALLBACK": "local",
		"CTX_SUMMARIZE_TIMEOUT":  u.Timeout.String(),
		"CTX_SUMMARIZE_RETRIES":  "1",
	}
	if u.Model != "" {
		env["CTX_SUMMARIZE_MODEL"] = u.Model
	}
	base = strings.TrimSuffix(base, "/")
	bearer, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if format == transcript.Anthropic {
		env["CTX_SUMMARIZE_BACKEND"] = "anthropic"
		env["CTX_SUMMARIZE_BASE_URL"] = strings.TrimSuffix(base, "/v1")
		switch {
		case r.Header.Get("X-Api-Key") != "":
			env["ANTHROPIC_API_KEY"] = r.Header.Get("X-Api-Key")
		case bearer != "":
			env["ANTHROPIC_AUTH_TOKEN"] = bearer
		default:
			return nil
		}
		return env
	}
	// Chat Completions and Responses clients: OpenAI's API (or what stands in for it)
	// summarizes through Chat Completions, at the upstream's /v1.
	if bearer == "" {
		return nil
	}
	env["CTX_SUMMARIZE_BACKEND"] = "openai"
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	env["CTX_SUMMARIZE_BASE_URL"] = base
	env["OPENAI_API_KEY"] = bearer
	return env
}
