package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/convstate"
	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/replay"
	"github.com/ctxkit/ctxkit/internal/safefile"
)

// Flags is ctx-proxy's command line.
type Flags struct {
	cli.Common `embed:""`

	Listen   string        `name:"listen" default:"127.0.0.1:8377" placeholder:"HOST:PORT" help:"Address to serve on." env:"CTX_PROXY_LISTEN"`
	Upstream string        `name:"upstream" placeholder:"URL" help:"Send every request to URL; default Anthropic's API for /v1/messages, OpenAI's for the rest." env:"CTX_PROXY_UPSTREAM"`
	Pipe     string        `name:"pipe" default:"${defaultPipe}" placeholder:"PIPELINE" help:"The filters each conversation goes through, as a shell pipeline; none: forward bodies unchanged." env:"CTX_PROXY_PIPE"`
	Timeout  time.Duration `name:"timeout" default:"2s" placeholder:"DURATION" help:"Most time the pipeline may take on one request; then the original is sent." env:"CTX_PROXY_TIMEOUT"`
	Log      string        `name:"log" placeholder:"FILE" help:"Append one JSON line per conversation request to FILE." env:"CTX_PROXY_LOG"`
	KeepFor  time.Duration `name:"keep-for" default:"24h" placeholder:"DURATION" help:"Forget a conversation untouched this long."`
	MaxConv  int           `name:"max-conversations" default:"1000" placeholder:"N" help:"Remember at most N conversations, the least recent forgotten first."`
	Status   bool          `name:"status" help:"Ask the proxy serving on --listen what each conversation has saved so far, and print it: a table on a terminal, JSON when piped."`

	Summarizer        string        `name:"summarizer" enum:"local,upstream" default:"local" placeholder:"local|upstream" help:"Who writes ctx-summarize's summaries: local (offline, the default) or upstream (the agent's own provider, with the client's own credentials: one paid model call per summary)." env:"CTX_PROXY_SUMMARIZER"`
	SummarizerModel   string        `name:"summarizer-model" placeholder:"NAME" help:"With --summarizer upstream, the model that summarizes (default the provider's small one: claude-haiku-4-5, gpt-4o-mini)." env:"CTX_PROXY_SUMMARIZER_MODEL"`
	SummarizerTimeout time.Duration `name:"summarizer-timeout" default:"60s" placeholder:"DURATION" help:"With --summarizer upstream, the most a summary may take; added to --timeout for the request it fires on. The local summary is the fallback." env:"CTX_PROXY_SUMMARIZER_TIMEOUT"`
}

const help = `A local HTTP server between an agent and its provider. Every conversation request
(POST /v1/messages, /v1/chat/completions, /v1/responses) goes through --pipe, the five
tiers by default, before it is forwarded; anything else is passed through untouched.
Responses stream back unchanged. Cache-stable: a request that extends the conversation's
last one is rebuilt on what was sent last time, so the prefix the provider cached stays
the prefix. If the pipeline fails, runs out of --timeout, or breaks a rule of
ctx-repair --check, the original body is sent. Details in ctx-proxy(1).`

// Tool returns ctx-proxy's description for the runner.
func Tool() *cli.Tool {
	t := cli.Command("ctx-proxy", "Run the pipeline on every request of a live agent, cache-stable.", help, run)
	t.Vars = map[string]string{"defaultPipe": replay.DefaultPipe}
	return t
}

// Examples are ctx-proxy's in --help.
func (*Flags) Examples() []cli.Example {
	return []cli.Example{
		{Does: "serve Claude Code through the five tiers", Command: "ctx-proxy --log proxy.jsonl & ANTHROPIC_BASE_URL=http://127.0.0.1:8377 claude"},
		{Does: "what each conversation of the running proxy has saved so far", Command: "ctx-proxy --status"},
		{Does: "only the cheap tiers, a line per request on stderr", Command: "ctx-proxy --stats --pipe 'ctx-budget | ctx-snip'"},
	}
}

// OmitCommon: ctx-proxy reads no document from files or stdin: it takes no file argument.
func (*Flags) OmitCommon() []string {
	return []string{"file", "in-place", "output", "path", "sidechains", "format", "stats-file", "latest", "agent"}
}

// Main runs ctx-proxy and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return cli.Main(Tool(), args, stdin, stdout, stderr, getenv)
}

func run(ctx *cli.Context, f *Flags) error {
	if f.Timeout < 0 {
		return cli.Usagef("--timeout must not be negative")
	}
	if f.Status {
		return showStatus(ctx, f.Listen)
	}
	if f.SummarizerTimeout <= 0 {
		return cli.Usagef("--summarizer-timeout must be positive, got %s", f.SummarizerTimeout)
	}
	s := &Server{
		Upstream:  f.Upstream,
		Anthropic: ctx.Getenv("ANTHROPIC_UPSTREAM"),
		OpenAI:    ctx.Getenv("OPENAI_UPSTREAM"),
		Timeout:   f.Timeout,
		Env:       ctx.CommonEnv(),
		Getenv:    ctx.Getenv,
		Counter:   ctx.Counter,
		Now:       ctx.Now,
	}
	if f.Summarizer == "upstream" {
		s.Summarizer = &UpstreamSummarizer{Model: f.SummarizerModel, Timeout: f.SummarizerTimeout}
	}
	if p := strings.TrimSpace(f.Pipe); p != "none" && p != "" {
		pipe, err := replay.ParsePipe(f.Pipe, replay.Tools())
		if err != nil {
			return cli.Usagef("--pipe: %v", err)
		}
		s.Pipe = pipe
	}
	if s.Env == nil {
		s.Env = map[string]string{}
	}
	store, err := filepath.Abs(f.Store)
	if err != nil {
		return cli.RuntimeError(err)
	}
	// The stages offload into the store: an absolute path, so a placeholder names a file
	// the agent can open whatever its working directory.
	s.Env["CTX_STORE"] = store
	s.Store = store
	if s.State, err = convstate.Open(filepath.Join(store, "proxy"), convstate.Options{MaxAge: f.KeepFor, MaxCount: f.MaxConv}, ctx.Now); err != nil {
		return cli.RuntimeError(fmt.Errorf("state directory: %w", err))
	}
	tmp, err := os.MkdirTemp("", "ctx-proxy-")
	if err != nil {
		return cli.RuntimeError(err)
	}
	defer os.RemoveAll(tmp)
	s.TempDir = tmp
	if f.Log != "" {
		lf, err := safefile.OpenAppend(f.Log, 0o600)
		if err != nil {
			return cli.RuntimeError(fmt.Errorf("--log: %w", err))
		}
		defer lf.Close()
		s.Log = lf
	}
	if f.Stats {
		s.Stats = ctx.Stderr
	}
	ln, err := net.Listen("tcp", f.Listen)
	if err != nil {
		return cli.RuntimeError(fmt.Errorf("listen: %w", err))
	}
	fmt.Fprintf(ctx.Stderr, "ctx-proxy: listening on http://%s\n", ln.Addr())
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second}
	defer s.Close() // after the server has stopped: the last log lines and states written
	sig, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return cli.RuntimeError(err)
	case <-sig.Done():
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(shut); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return cli.RuntimeError(err)
		}
		return nil
	}
}

// statusWait is how long --status waits for a proxy to answer: it runs on loopback, so
// one that takes longer is stuck, and the user should hear so rather than wait.
const statusWait = 5 * time.Second

// showStatus asks the proxy on addr for its /ctxkit/status page and prints it: the JSON as
// served when stdout is piped (for jq and scripts), a table on a terminal.
func showStatus(ctx *cli.Context, addr string) error {
	url := "http://" + addr + "/ctxkit/status"
	client := &http.Client{Timeout: statusWait}
	noProxy := cli.WithHint(cli.RuntimeError(fmt.Errorf("no ctx-proxy answers on %s", addr)),
		"start one with `ctx-proxy --listen "+addr+"`, or give --listen the address it serves on")
	resp, err := client.Get(url)
	if err != nil {
		noProxy.Err = fmt.Errorf("no ctx-proxy answers on %s: %w", addr, errors.Unwrap(err))
		return noProxy
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return cli.RuntimeError(fmt.Errorf("read %s: %w", url, err))
	}
	var st statusPage
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &st) != nil || st.Conversations == nil {
		noProxy.Err = fmt.Errorf("%s answers, but not as ctx-proxy does (HTTP %d)", addr, resp.StatusCode)
		return noProxy
	}
	if !ctx.StdoutTTY {
		_, err = ctx.Stdout.Write(body)
	} else {
		err = writeStatusTable(ctx.Stdout, st)
	}
	if err != nil {
		return cli.RuntimeError(fmt.Errorf("write stdout: %w", err))
	}
	return nil
}

// writeStatusTable is --status for a person: a line per conversation, most recent first,
// and the totals. A conversation's key is what its client sent: shown escaped.
func writeStatusTable(w io.Writer, st statusPage) error {
	if len(st.Conversations) == 0 {
		_, err := fmt.Fprintln(w, "no conversation yet")
		return err
	}
	convs := append([]statusConv(nil), st.Conversations...)
	sort.SliceStable(convs, func(i, j int) bool { return convs[i].Updated.After(convs[j].Updated) })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "conversation\trequests\ttokens in\tsent\tsaved\tsaved %\tfallbacks\tmessages\tupdated\t")
	var total statusConv
	for _, c := range convs {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%s\t\n", human.Safe(c.Conversation), c.Requests, c.TokensIn, c.TokensSent,
			c.Saved, percent(c.Saved, c.TokensIn), c.Fallbacks, c.Messages, c.Updated.Local().Format("2006-01-02 15:04:05"))
		total.Requests += c.Requests
		total.TokensIn += c.TokensIn
		total.TokensSent += c.TokensSent
		total.Saved += c.Saved
		total.Fallbacks += c.Fallbacks
	}
	fmt.Fprintf(tw, "%d conversations\t%d\t%d\t%d\t%d\t%s\t%d\t\t\t\n", len(convs), total.Requests, total.TokensIn,
		total.TokensSent, total.Saved, percent(total.Saved, total.TokensIn), total.Fallbacks)
	return tw.Flush()
}

func percent(part, whole int) string {
	if whole <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(whole))
}
