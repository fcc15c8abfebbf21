package proxy

import (
	"math"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/convstate"
	"github.com/ctxkit/ctxkit/internal/measure"
)

// What the model saw: in its finish step (after the response) the proxy keeps, beside each
// conversation's state, its last request exactly as forwarded, and what it was (convstate's
// Sent: the client's session, its working directory, the model, tokens and window), so that
// ctx-count --latest shows the window as the model saw it rather than as the client's log
// has it, and --status the utilization of the window as sent.

// sentAround is what the state keeps of the request as sent around its messages, sent
// (convstate.State.SentHead and the rest): the bytes before and after its message array,
// when that array is the messages one after the other, a comma between; else the request
// whole. Nothing when sent are not the messages of the request p sent (a later request of
// the conversation was kept meanwhile: its own finish writes them).
func sentAround(p *pending, sent []string) (head, tail, whole string) {
	if len(p.sentMsgs) != len(sent) || convstate.CommonPrefix(p.sentMsgs, sent) != len(sent) {
		return "", "", ""
	}
	if start, end := p.sentAt[0], p.sentAt[1]; start >= 0 {
		// The array holds the messages in order with nothing but commas and white space
		// between: of its size, it holds none.
		if end-start == joinedLen(sent) {
			return string(p.sent[:start]), string(p.sent[end:]), ""
		}
	}
	return "", "", string(p.sent)
}

// sessionOf is the client's own id of the session a request belongs to, "" when it sends
// none: Claude Code's X-Claude-Code-Session-Id (its log is <id>.jsonl), Codex's session_id
// or conversation_id header, else the prompt_cache_key it sets to the same id (its rollout's
// name ends with it).
func sessionOf(r *http.Request, cacheKey string) string {
	for _, h := range []string{"X-Claude-Code-Session-Id", "Session_id", "Session-Id", "Conversation_id"} {
		if v := strings.TrimSpace(r.Header.Get(h)); v != "" {
			return v
		}
	}
	return cacheKey
}

// sentMeta fills in the state's last request (model, tokens, window) and describes the
// request as sent for its file.
func (s *Server) sentMeta(st *convstate.State, rec *Record, p *pending) *convstate.Sent {
	window := s.windowOf(p.model)
	st.Model, st.LastSent, st.Window = p.model, rec.TokensSent, window
	return &convstate.Sent{
		Format:   string(p.format),
		Model:    p.model,
		Session:  p.session,
		Cwd:      p.cwd,
		Tools:    p.tools,
		Messages: rec.MessagesSent,
		Tokens:   rec.TokensSent,
		Window:   window,
		Received: rec.Time,
		Answered: st.Answered,
	}
}

// windowOf is the effective window (window less the reply's reserve) of model, as the
// stages measure it: --model, --window and --reserve given to the proxy win.
func (s *Server) windowOf(model string) int {
	look := func(k string) string {
		if v, ok := s.Env[k]; ok {
			return v
		}
		if s.Getenv != nil {
			return s.Getenv(k)
		}
		return ""
	}
	ch := measure.Choice{Model: look("CTX_MODEL")}
	var n cli.Count
	if v := look("CTX_WINDOW"); v != "" && n.UnmarshalText([]byte(v)) == nil {
		ch.Window = int(n)
	}
	if v := look("CTX_RESERVE"); v != "" && n.UnmarshalText([]byte(v)) == nil {
		r := int(n)
		ch.Reserve = &r
	}
	b, err := measure.Window(ch, model, nil)
	if err != nil {
		return 0
	}
	return b.Effective
}

// The ways clients name their working directory in a request: Claude Code's system prompt
// ("Working directory: /p" in its <env>, "Primary working directory: /p" in later
// versions), Codex's environment_context ("<cwd>/p</cwd>").
var (
	cwdLine = regexp.MustCompile(`(?m)^[ \t-]*(?:Primary working directory|Current working directory|Working directory):[ \t]*(.+?)[ \t]*$`)
	cwdTag  = regexp.MustCompile(`<cwd>\s*([^<\n]+?)\s*</cwd>`)
)

// cwdNeeds is what text must hold for cwdLine and cwdTag to match it.
var cwdNeeds = [...]string{"orking directory:", "<cwd>"}

// cwdMessages is how many of the first messages are read for a working directory: Codex
// puts its environment_context in its first user messages, after the developer's.
const cwdMessages = 6

// cwdIn is the working directory the client names in a request whose system prompt and
// instructions are top (in that order) and whose messages are msgs (the prompt, else the
// first messages), "" when it names no absolute path. rewrite has them apart already.
func cwdIn(top, msgs []gjson.Result) string {
	found := ""
	look := func(text string) bool {
		for i, re := range []*regexp.Regexp{cwdLine, cwdTag} {
			// What each must find, looked for first: a long prompt without it is not
			// run through the expression (a quarter of a millisecond a request).
			if !strings.Contains(text, cwdNeeds[i]) {
				continue
			}
			if m := re.FindStringSubmatch(text); m != nil && filepath.IsAbs(m[1]) {
				found = filepath.Clean(m[1])
				return false
			}
		}
		return true
	}
	for _, v := range top {
		if !texts(v, look) {
			return found
		}
	}
	for _, m := range msgs[:min(len(msgs), cwdMessages)] {
		if !texts(m.Get("content"), look) {
			break
		}
	}
	return found
}

// texts calls f on every string in v (a string, or blocks holding them as "text"), until
// f returns false; it returns false then.
func texts(v gjson.Result, f func(string) bool) bool {
	switch {
	case v.Type == gjson.String:
		return f(v.Str)
	case v.IsArray():
		ok := true
		v.ForEach(func(_, b gjson.Result) bool {
			if t := b.Get("text"); t.Type == gjson.String {
				ok = f(t.Str)
			} else if b.Type == gjson.String {
				ok = f(b.Str)
			}
			return ok
		})
		return ok
	}
	return true
}

// statusOf is a conversation's line of /ctxkit/status.
func statusOf(st *convstate.State) statusConv {
	c := statusConv{Conversation: st.Key, Updated: st.Updated, Requests: st.Requests, TokensIn: st.TokensIn,
		TokensSent: st.TokensSent, Saved: st.Saved, Fallbacks: st.Fallback, Messages: st.Messages,
		Model: st.Model, LastSent: st.LastSent, Window: st.Window}
	if st.Window > 0 {
		c.Utilization = math.Round(10000*float64(st.LastSent)/float64(st.Window)) / 10000
	}
	return c
}
