package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/convstate"
	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/redact"
	"github.com/ctxkit/ctxkit/internal/replay"
	"github.com/ctxkit/ctxkit/internal/safefile"
	offstore "github.com/ctxkit/ctxkit/internal/store"
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

	ReadTimeout  time.Duration `name:"read-timeout" default:"30s" placeholder:"DURATION" help:"Most time a request's headers may take to arrive, and its body, plus a second per MiB it declares." env:"CTX_PROXY_READ_TIMEOUT"`
	IdleTimeout  time.Duration `name:"idle-timeout" default:"60s" placeholder:"DURATION" help:"Close a connection idle this long between requests." env:"CTX_PROXY_IDLE_TIMEOUT"`
	WriteTimeout time.Duration `name:"write-timeout" default:"5m" placeholder:"DURATION" help:"Cut an answer the client has taken nothing of for this long; a stream the client reads is never cut." env:"CTX_PROXY_WRITE_TIMEOUT"`
	Drain        time.Duration `name:"drain" default:"30s" placeholder:"DURATION" help:"On SIGINT or SIGTERM, give the requests in flight this long to end; those still running then are cut, the client seeing an error." env:"CTX_PROXY_DRAIN"`
	MaxBody      cli.Size      `name:"max-body" default:"64MiB" placeholder:"SIZE" help:"Refuse a request body over SIZE with 413 (0: no limit); the providers' own limit is 32 MB." env:"CTX_PROXY_MAX_BODY"`

	AuthToken   string   `name:"auth-token" placeholder:"TOKEN" help:"Serve only requests that carry TOKEN, in the X-Ctxkit-Token header or as a base URL ending in /t/TOKEN; required when --listen is beyond loopback." env:"CTX_PROXY_AUTH_TOKEN"`
	AllowHost   []string `name:"allow-host" placeholder:"NAME" help:"Serve requests whose Host is NAME too (besides localhost, loopback addresses and the --listen host); repeatable."`
	AllowOrigin []string `name:"allow-origin" placeholder:"ORIGIN" help:"Serve requests from web pages of ORIGIN (https://app.example); any other request with an Origin header is refused. Repeatable."`

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
ctx-repair --check, the original body is sent. It serves loopback by default; beyond it
only with --auth-token. SIGINT and SIGTERM drain it (--drain). Details in ctx-proxy(1).`

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
		{Does: "for a team on the network (plain HTTP: a trusted network), clients sending the token", Command: "CTX_PROXY_AUTH_TOKEN=$(openssl rand -hex 32) ctx-proxy --listen 0.0.0.0:8377 --allow-host devbox"},
	}
}

// OmitCommon: ctx-proxy reads no document from files or stdin: it takes no file argument.
func (*Flags) OmitCommon() []string {
	return []string{"file", "in-place", "output", "path", "sidechains", "format", "stats-file", "latest", "agent", "redact"}
}

// Main runs ctx-proxy and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return cli.Main(Tool(), args, stdin, stdout, stderr, getenv)
}

func run(ctx *cli.Context, f *Flags) error {
	if f.Redact {
		return cli.Usagef("ctx-proxy forwards the conversation as its client sent it; --redact does not apply")
	}
	if f.Timeout < 0 {
		return cli.Usagef("--timeout must not be negative")
	}
	if f.AuthToken != "" {
		if why := ValidToken(f.AuthToken); why != "" {
			return cli.Usagef("--auth-token %s", why)
		}
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"--read-timeout", f.ReadTimeout}, {"--idle-timeout", f.IdleTimeout}, {"--write-timeout", f.WriteTimeout}, {"--drain", f.Drain}} {
		if d.d <= 0 {
			return cli.Usagef("%s must be positive, got %s", d.name, d.d)
		}
	}
	if f.MaxBody == 0 {
		f.MaxBody = -1 // no limit
	}
	if f.Status {
		return showStatus(ctx, f.Listen, f.AuthToken)
	}
	if f.SummarizerTimeout <= 0 {
		return cli.Usagef("--summarizer-timeout must be positive, got %s", f.SummarizerTimeout)
	}
	for _, up := range []struct{ name, url string }{{"--upstream", f.Upstream},
		{"ANTHROPIC_UPSTREAM", ctx.Getenv("ANTHROPIC_UPSTREAM")}, {"OPENAI_UPSTREAM", ctx.Getenv("OPENAI_UPSTREAM")}} {
		if up.url == "" {
			continue
		}
		u, err := url.Parse(up.url)
		if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return cli.Usagef("%s must be an http or https URL with a host and no query, got %q", up.name, redact.Userinfo(up.url))
		}
		if u.User != nil {
			// Go's client would send it as Basic auth on every request, beside the
			// client's own key: to whatever the upstream is, every client's request
			// would carry the operator's credentials.
			ctx.Warnf("%s: the user:password in the URL is not sent; requests carry the clients' own credentials", up.name)
		}
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

		MaxBody:      int64(f.MaxBody),
		ReadTimeout:  f.ReadTimeout,
		IdleTimeout:  f.IdleTimeout,
		WriteTimeout: f.WriteTimeout,
		AllowHosts:   f.AllowHost,
		AllowOrigins: f.AllowOrigin,
		AuthToken:    f.AuthToken,
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
	// The store, made here (with a .gitignore when it is named inside a git work tree)
	// before the state directory inside it.
	made, err := offstore.Create(f.Store)
	if errors.Is(err, offstore.ErrNoDir) {
		return cli.Usagef("%v", err)
	}
	if err != nil {
		return cli.RuntimeError(err)
	}
	made.Close()
	store := made.Dir()
	// The stages offload into the store: an absolute path, so a placeholder names a file
	// the agent can open whatever its working directory.
	s.Env["CTX_STORE"] = store
	s.Store = store
	// State files are authenticated with the user's key, kept outside every store.
	key, err := convstate.LoadKey(ctx.StateDir())
	if err != nil {
		ctx.Warnf("state key: %v; conversations are remembered only until the proxy stops", err)
	}
	if s.State, err = convstate.Open(filepath.Join(store, "proxy"), convstate.Options{MaxAge: f.KeepFor, MaxCount: f.MaxConv, Key: key, Canonical: canonical}, ctx.Now); err != nil {
		return cli.RuntimeError(fmt.Errorf("state directory: %w", err))
	}
	tmp, err := os.MkdirTemp("", "ctx-proxy-")
	if err != nil {
		return cli.RuntimeError(err)
	}
	defer os.RemoveAll(tmp)
	s.TempDir = tmp
	if s.Redact, err = ctx.Redactor(); err != nil {
		return err
	}
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
	needToken := cli.WithHint(cli.Usagef("--listen %s is reachable from other machines: give --auth-token (or $CTX_PROXY_AUTH_TOKEN), which every client must send", f.Listen),
		"clients send it in the "+TokenHeader+" header or with a base URL ending in /t/TOKEN; keep --listen on 127.0.0.1 for this machine alone")
	if f.AuthToken == "" && !loopbackOnly(f.Listen) {
		return needToken // before binding: never reachable without it, not for a moment
	}
	ln, err := net.Listen("tcp", f.Listen)
	if err != nil {
		return cli.RuntimeError(fmt.Errorf("listen: %w", err))
	}
	bound := ln.Addr().(*net.TCPAddr)
	if !bound.IP.IsLoopback() && f.AuthToken == "" {
		ln.Close()
		return needToken
	}
	s.Listen, _, _ = net.SplitHostPort(f.Listen)
	if s.Listen == "" {
		s.Listen = bound.IP.String() // ":8377": every address
	}
	fmt.Fprintf(ctx.Stderr, "ctx-proxy: listening on http://%s\n", ln.Addr())
	if !bound.IP.IsLoopback() {
		fmt.Fprintf(ctx.Stderr, "ctx-proxy: reachable from other machines: every request must carry the --auth-token (%s header or /t/TOKEN base URL)\n", TokenHeader)
	}
	srv := s.HTTPServer()
	// net/http's own complaints (out of descriptors, a handler's panic) as ours.
	srv.ErrorLog = log.New(ctx.Stderr, "ctx-proxy: warning: ", 0)
	// Every request's context, cancelled with ErrStopped when requests still running at
	// the end of --drain are cut.
	base, cut := context.WithCancelCause(context.Background())
	defer cut(nil)
	srv.BaseContext = func(net.Listener) context.Context { return base }
	defer s.Close() // after the server has stopped: the last log lines and states written
	// SIGTERM (kill, systemd, docker stop) as SIGINT: stop, drain, write, clean up. Go's
	// default for it was to die mid-request with nothing written.
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return cli.RuntimeError(err)
	case <-sig:
	}
	return drain(ctx, srv, s, f.Drain, sig, cut)
}

// drain stops srv: no new connection is taken, idle ones are closed, and the requests in
// flight are given up to d to end (a second signal ends the wait). Those still running
// then are cut: their upstream requests cancelled with ErrStopped, which breaks the
// client's connection rather than ending the answer as if it were whole, and every
// connection closed. Their log lines and states are written by s.Close after it.
func drain(ctx *cli.Context, srv *http.Server, s *Server, d time.Duration, sig <-chan os.Signal, cut context.CancelCauseFunc) error {
	wait, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	go func() {
		select {
		case <-sig:
			cancel()
		case <-wait.Done():
		}
	}()
	err := srv.Shutdown(wait)
	if err == nil {
		return nil
	}
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return cli.RuntimeError(err)
	}
	n := s.Active()
	cut(ErrStopped)
	srv.Close()
	if n > 0 {
		ctx.Warnf("stopping: %d requests still running after --drain %s were cut", n, d)
	}
	return nil
}

// loopbackOnly reports whether every address listen names is a loopback one: "" (every
// address), a name that resolves elsewhere, or one that does not resolve is not.
func loopbackOnly(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil || host == "" {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	ips, err := net.LookupIP(host)
	if err != nil || len(ips) == 0 {
		return false
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return false
		}
	}
	return true
}

// statusWait is how long --status waits for a proxy to answer: it runs on loopback, so
// one that takes longer is stuck, and the user should hear so rather than wait.
const statusWait = 5 * time.Second

// showStatus asks the proxy on addr for its /ctxkit/status page and prints it: the JSON as
// served when stdout is piped (for jq and scripts), a table on a terminal.
func showStatus(ctx *cli.Context, addr, token string) error {
	url := "http://" + addr + "/ctxkit/status"
	client := &http.Client{Timeout: statusWait}
	noProxy := cli.WithHint(cli.RuntimeError(fmt.Errorf("no ctx-proxy answers on %s", addr)),
		"start one with `ctx-proxy --listen "+addr+"`, or give --listen the address it serves on")
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return cli.Usagef("--listen %q: %v", addr, err)
	}
	if token != "" {
		req.Header.Set(TokenHeader, token)
	}
	resp, err := client.Do(req)
	if err != nil {
		noProxy.Err = fmt.Errorf("no ctx-proxy answers on %s: %w", addr, errors.Unwrap(err))
		return noProxy
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return cli.RuntimeError(fmt.Errorf("read %s: %w", url, err))
	}
	if resp.StatusCode == http.StatusUnauthorized && token == "" {
		return cli.WithHint(cli.RuntimeError(fmt.Errorf("the ctx-proxy on %s needs its token", addr)), "give --auth-token or $CTX_PROXY_AUTH_TOKEN")
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
	fmt.Fprintln(tw, "conversation\trequests\ttokens in\tsent\tsaved\tsaved %\tfallbacks\tmessages\tlast sent\twindow %\tupdated\t")
	var total statusConv
	for _, c := range convs {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%d\t%s\t%s\t\n", human.Safe(c.Conversation), c.Requests, c.TokensIn, c.TokensSent,
			c.Saved, percent(c.Saved, c.TokensIn), c.Fallbacks, c.Messages, c.LastSent, percent(c.LastSent, c.Window),
			c.Updated.Local().Format("2006-01-02 15:04:05"))
		total.Requests += c.Requests
		total.TokensIn += c.TokensIn
		total.TokensSent += c.TokensSent
		total.Saved += c.Saved
		total.Fallbacks += c.Fallbacks
	}
	fmt.Fprintf(tw, "%d conversations\t%d\t%d\t%d\t%d\t%s\t%d\t\t\t\t\t\n", len(convs), total.Requests, total.TokensIn,
		total.TokensSent, total.Saved, percent(total.Saved, total.TokensIn), total.Fallbacks)
	return tw.Flush()
}

func percent(part, whole int) string {
	if whole <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(whole))
}
