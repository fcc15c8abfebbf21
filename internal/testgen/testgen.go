// Package testgen is a deterministic generator of realistic synthetic conversation documents
// for tests and benchmarks.
//
// Generate writes one coding-agent session — a system prompt, a user request, then many
// assistant turns with tool calls and tool results of mixed content (source code, JSON, logs,
// shell output, prose, now and then CJK text and a 50-200 KB result), repeated reads of the
// same file, failing commands, user follow-ups and assistant text — in any of the formats
// ctxkit reads (DESIGN.md §2). The same Options always give the same bytes, so samples can be
// committed and benchmark inputs rebuilt anywhere; output is streamed, so a 100 MB document
// costs a few seconds and little memory.
package testgen

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Options selects what Generate writes.
type Options struct {
	Format string // anthropic, openai, responses, claude-code, codex or cline
	Size   int    // approximate size in bytes; the smallest document (one tool call) is about 10 KB
	Seed   int64
	Images bool // include small base64 PNG images
	// Pinned adds the standing context the client sends among the messages, as current
	// clients write it (pinned.go): Codex's developer message, AGENTS.md and environment
	// (codex, responses, openai); Claude Code's CLAUDE.md and reminders at the head of the
	// first user message (claude-code, anthropic). Without it the bytes are as they were.
	Pinned bool
	// Version, when set, writes a session as a given version of the agent writes it, with
	// usage figures faithful to what its provider bills (faithful.go): "2.1" for
	// claude-code (Claude Code 2.1.114 with Opus 4.7: thinking stored empty with only its
	// signature, attachment records, a compaction that keeps the last turn whole), "0.114"
	// for codex (Codex 0.114: each token_count written twice, heavy reasoning that the
	// next user turn no longer sends, a compaction). "" keeps the shapes the samples were
	// written with, byte for byte.
	Version string
	// Tokens counts a text as the provider's tokenizer does, for a Version's usage
	// figures; nil counts 4 bytes a token. A test that measures a counter against the
	// figures passes the counter, so that what they check is what the counter does not
	// see (the hidden part, thinking stored empty, what a compaction or a turn drops).
	Tokens func(string) int
	// Compactions is how many times the agent compacts its history (claude-code and
	// codex), spread evenly over the session: Claude Code 2.1's compact_boundary record
	// and summary message, Codex's compacted record. 0 leaves the one compaction halfway
	// through a Codex session over 5 MB.
	Compactions int
	// Preserve writes Claude Code's compactions in the form that keeps the newest turn as
	// it was (compactMetadata.preservedSegment): the messages after the summary chain on
	// from the last one before the boundary, which the reader relinks to the summary.
	Preserve bool

	// Of a subagent's log (subagent.go): its lines are isSidechain, name agentID (none
	// for "" : Claude Code 1.x), belong to session and start at start; only its user and
	// assistant records are written, as Claude Code writes a subagent's log.
	sub       bool
	agentID   string
	session   string
	startedAt time.Time
}

// Formats lists the accepted Options.Format values.
var Formats = []string{"anthropic", "openai", "responses", "claude-code", "codex", "cline"}

// Generate writes one document described by o to w.
func Generate(w io.Writer, o Options) error {
	if o.Size < 0 {
		return fmt.Errorf("testgen: negative size %d", o.Size)
	}
	switch {
	case o.Version == "":
	case o.Version == "2.1" && o.Format == "claude-code", o.Version == "0.114" && o.Format == "codex":
		if o.Images {
			return fmt.Errorf("testgen: a Version document has no images")
		}
	default:
		return fmt.Errorf("testgen: no version %q of %s (want 2.1 for claude-code, 0.114 for codex)", o.Version, o.Format)
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	g := newGen(o, bw)
	var e emitter
	switch o.Format {
	case "anthropic":
		g.d, g.factor = dClaude, 1.3
		e = &anthropicEmitter{g: g}
	case "claude-code":
		g.d, g.factor = dClaude, 2.6
		e = &claudeCodeEmitter{g: g}
	case "openai":
		g.d, g.factor = dChat, 1.15
		e = &openaiEmitter{g: g}
	case "responses":
		g.d, g.factor = dResp, 1.15
		e = &responsesEmitter{g: g}
	case "codex":
		g.d, g.factor = dCodex, 1.35
		e = &codexEmitter{g: g}
	case "cline":
		g.d, g.factor = dCline, 1.2
		e = &clineEmitter{g: g}
	default:
		return fmt.Errorf("testgen: unknown format %q (want one of %s)", o.Format, strings.Join(Formats, ", "))
	}
	g.run(e)
	if g.out.err != nil {
		return g.out.err
	}
	return bw.Flush()
}

// dialect is the tool vocabulary of a format family.
type dialect int

const (
	dClaude dialect = iota // Read, Bash, Grep, Edit with Claude Code's result texts
	dChat                  // read_file, shell (string command), apply_patch
	dResp                  // read_file, shell (argv command), apply_patch
	dCodex                 // shell for everything, as the Codex CLI does
	dCline                 // read_file, execute_command, search_files, replace_in_file
)

type kind int

const (
	kRead kind = iota
	kBash
	kGrep
	kEdit
	kImage
)

type file struct {
	path    string
	content string
}

type editInfo struct {
	old, new string
	original string
	line     int
}

// call is one tool call and its result, in format-neutral terms plus the rendering for the
// session's dialect (name, input, text).
type call struct {
	id      string
	kind    kind
	name    string
	input   []byte // JSON object
	path    string // repository-relative
	cmd     string
	desc    string
	pattern string

	text     string // the result as the model sees it
	raw      string // underlying output: file content, stdout, grep lines
	isError  bool
	exit     int
	dur      float64
	file     *file
	edit     *editInfo
	img      *pngImage
	numLines int
}

type usage struct{ in, create, read, out, reasoning int }

type turn struct {
	thinking string
	text     string
	calls    []*call
	usage    usage
	// Of a Version session: what its thinking costs (think), and the summary a Codex
	// reasoning item shows of it.
	think   int
	summary string
}

type userMsg struct {
	text string
	imgs []*pngImage
	pins []string // text blocks before text: Claude Code's reminders (Options.Pinned)
}

// emitter writes one format. Methods are called in session order; each writes whole records.
type emitter interface {
	begin()
	user(m *userMsg)
	assistant(t *turn)
	results(t *turn)
	compact(summary string)
	end()
	tail() int // bytes end will write besides the last assistant message
}

type gen struct {
	o      Options
	r      rng
	d      dialect
	out    out
	factor float64 // document bytes per result byte, to turn the remaining budget into sizes

	clock     time.Time
	sessionID string
	system    string
	request   string

	files     map[string]*file
	readOrder []string
	edited    []string
	pngs      map[[2]int]*pngImage

	step        int
	errors      int
	ctx         int // bytes of context so far, for usage numbers
	prevReq     int // ctx at the previous model request: what the prompt cache holds
	total       usage
	compacted   bool
	compactions int     // compactions made (Options.Compactions)
	turnStart   int     // ctx before the newest tool turn: what a preserved segment keeps
	preserved   bool    // the newest compaction kept the newest turn whole
	pins        *pinned // Options.Pinned

	f faithful // Options.Version's state
}

func newGen(o Options, w *bufio.Writer) *gen {
	g := &gen{o: o, r: newRNG(o.Seed), out: out{w: w}, files: map[string]*file{}, pngs: map[[2]int]*pngImage{}}
	g.clock = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC).Add(time.Duration(g.r.intn(30*24*3600)) * time.Second).Add(time.Duration(g.r.intn(1000)) * time.Millisecond)
	g.sessionID = g.r.uuid()
	if o.sub {
		g.clock, g.sessionID = o.startedAt, o.session
	}
	g.system = systemPrompt(&g.r)
	g.request = g.r.pick(requests)
	if o.Pinned {
		g.pins = g.makePinned()
	}
	if o.Version != "" {
		g.f = faithful{on: true, r: newRNG(o.Seed ^ 0x37c0_0a71), count: o.Tokens}
	}
	return g
}

// stamp advances the clock by lo..hi milliseconds and returns it in the ISO form both CLIs use.
func (g *gen) stamp(lo, hi int) string {
	g.clock = g.clock.Add(time.Duration(g.r.between(lo, hi)) * time.Millisecond)
	return g.clock.Format("2006-01-02T15:04:05.000Z")
}

func (g *gen) remaining(e emitter) int { return g.o.Size - g.out.n - e.tail() - 600 }

func (g *gen) stopAt() int { return max(2500, g.o.Size/200) }

func (g *gen) run(e emitter) {
	g.ctx = len(g.system) + 12000
	if g.f.on {
		g.f.tok = g.f.base(g)
	}
	e.begin()
	first := &userMsg{text: g.request}
	if p := g.pins; p != nil {
		if g.d == dClaude {
			first.pins = []string{p.claudeMd, p.reminder}
		} else {
			g.ctx += len(p.permissions) + len(p.skills) + len(p.agents) + len(p.env)
		}
	}
	if g.o.Images {
		first.text += " I've attached a screenshot of the dashboard showing the errors."
		first.imgs = append(first.imgs, g.image())
	}
	g.sendUser(e, first)
	untilFollowUp := g.r.between(4, 9)
	for g.step == 0 || g.remaining(e) >= g.stopAt() { // at least one tool call
		t := g.toolTurn(g.remaining(e))
		g.turnStart = g.ctx
		g.sendAssistant(e, t)
		e.results(t)
		for _, c := range t.calls {
			g.ctx += len(c.text) + len(c.input)
			if c.img != nil {
				g.ctx += c.img.w * c.img.h / 750 * 4
			}
		}
		g.step++
		if g.compactsNow() {
			g.compacted = true
			g.compactions++
			size := 4000
			if g.o.Compactions > 0 {
				size = g.r.between(2500, 6000)
			}
			s := g.summary(size)
			kept := g.ctx - g.turnStart
			g.preserved = false
			e.compact(s)
			g.ctx = len(g.system) + 12000 + len(s)
			if g.preserved {
				g.ctx += kept
			}
			if g.d == dCodex || g.f.on {
				g.ctx += len(g.request)
			}
			if p := g.pins; p != nil {
				g.ctx += len(p.permissions) + len(p.skills) + len(p.agents) + len(p.env)
			}
			g.prevReq = 0
		}
		untilFollowUp--
		if untilFollowUp <= 0 && g.remaining(e) > 3*g.stopAt() {
			g.sendAssistant(e, &turn{text: g.summary(g.r.between(300, 1800))})
			m := &userMsg{text: g.followUp()}
			if g.o.Images && g.r.chance(0.15) {
				m.imgs = append(m.imgs, g.image())
			}
			g.sendUser(e, m)
			untilFollowUp = g.r.between(5, 14)
		}
	}
	g.sendAssistant(e, &turn{text: g.summary(g.r.between(300, 900))})
	e.end()
}

// compactsNow says whether the session compacts after this step: Options.Compactions
// times spread evenly (claude-code and codex), else a Codex rollout over 5 MB halfway, a
// Version session over 300 KB at 45%.
func (g *gen) compactsNow() bool {
	switch {
	case g.o.Compactions > 0:
		return (g.d == dCodex || g.o.Format == "claude-code") && g.compactions < g.o.Compactions &&
			g.out.n > (g.compactions+1)*g.o.Size/(g.o.Compactions+1)
	case g.compacted:
		return false
	case g.f.on:
		return g.o.Size >= 300<<10 && g.out.n > g.o.Size*45/100
	}
	return g.d == dCodex && g.o.Size > 5<<20 && g.out.n > g.o.Size/2
}

func (g *gen) sendUser(e emitter, m *userMsg) {
	if g.f.on {
		g.f.user(g, m)
	}
	e.user(m)
	g.ctx += len(m.text)
	for _, p := range m.pins {
		g.ctx += len(p)
	}
	for _, p := range m.imgs {
		g.ctx += p.w * p.h / 750 * 4
	}
}

// sendAssistant fills in usage as an API would report it for this request: the prompt cache
// covers the context of the previous request, the rest is newly written to it.
func (g *gen) sendAssistant(e emitter, t *turn) {
	outBytes := len(t.thinking) + len(t.text)
	for _, c := range t.calls {
		outBytes += len(c.input) + 40
	}
	t.usage = usage{
		in:        g.r.between(1, 9),
		read:      g.prevReq / 4,
		create:    (g.ctx - g.prevReq) / 4,
		out:       outBytes/4 + g.r.between(5, 60),
		reasoning: len(t.thinking) / 4,
	}
	if g.f.on {
		g.f.request(g, t)
	}
	g.total.in += t.usage.in + t.usage.read + t.usage.create
	g.total.read += t.usage.read
	g.total.out += t.usage.out
	g.total.reasoning += t.usage.reasoning
	e.assistant(t)
	g.prevReq = g.ctx
	g.ctx += outBytes
	if g.f.on {
		g.f.reply(g, t)
	}
}

func (g *gen) image() *pngImage {
	s := pngSizes[g.r.intn(len(pngSizes))]
	if p := g.pngs[s]; p != nil {
		return p
	}
	p := makePNG(&g.r, s[0], s[1])
	g.pngs[s] = p
	return p
}

// drawSize returns a result size from a long-tailed distribution like real sessions: mostly
// small, some tens of KB, a few of 50-200 KB.
func (g *gen) drawSize() int {
	switch p := g.r.float(); {
	case p < 0.55:
		return g.r.between(200, 3000)
	case p < 0.87:
		return g.r.between(3000, 15000)
	case p < 0.97:
		return g.r.between(15000, 50000)
	default:
		return g.r.between(50000, 180000)
	}
}

type plan struct {
	k    kind
	path string
	bash int // index into bashSpecs, or -1 to choose
	fail bool
}

const mainFile = "internal/server/handler.go"

// opening runs first so even a 30 KB sample holds every feature: a shell call, parallel
// calls, a failing command, an edit, a repeated read, CJK text and a failed read.
func (g *gen) opening() []plan {
	switch g.step {
	case 0:
		return []plan{{k: kBash, bash: bashGitStatus}}
	case 1:
		return []plan{{k: kRead, path: mainFile}, {k: kGrep}}
	case 2:
		return []plan{{k: kRead, path: "config/settings.json"}}
	case 3:
		return []plan{{k: kBash, bash: bashGoTest, fail: true}}
	case 4:
		return []plan{{k: kEdit, path: mainFile}}
	case 5:
		return []plan{{k: kRead, path: mainFile}}
	case 6:
		p := []plan{{k: kRead, path: "docs/README.zh-CN.md"}}
		if g.o.Images && g.d == dClaude {
			p = append(p, plan{k: kImage, path: "docs/screenshot.png"})
		}
		return p
	case 7:
		return []plan{{k: kRead, path: "internal/server/handlers.go", fail: true}}
	}
	return nil
}

func (g *gen) randomPlan() plan {
	switch p := g.r.float(); {
	case p < 0.36:
		return plan{k: kRead, fail: g.r.chance(0.02)}
	case p < 0.72:
		return plan{k: kBash, bash: -1, fail: g.r.chance(0.06)}
	case p < 0.88:
		return plan{k: kGrep}
	case p < 0.99 || !g.o.Images || g.d != dClaude:
		return plan{k: kEdit}
	default:
		return plan{k: kImage, path: "docs/screenshot.png"}
	}
}

func (g *gen) toolTurn(rem int) *turn {
	plans := g.opening()
	if plans == nil {
		n := 1
		if g.r.chance(0.2) {
			n = g.r.between(2, 4)
		}
		for i := 0; i < n; i++ {
			plans = append(plans, g.randomPlan())
		}
	}
	t := &turn{}
	budget := int(float64(rem-1500*len(plans)) / g.factor)
	switch {
	case g.f.on:
		// Opus 4.7 and gpt-5-codex think before most replies, at length.
		if g.f.r.chance(0.8) {
			t.thinking = g.thinking(min(g.f.r.between(200, 6000), budget/6+100))
		}
	case g.r.chance(0.35):
		t.thinking = g.thinking(min(g.r.between(150, 1800), budget/8+50))
	}
	if g.r.chance(0.5) {
		t.text = g.leadIn(plans[0])
	}
	perCall := budget / len(plans)
	limit := max(1500, int(float64(g.o.Size)/(5*g.factor)))
	spent := len(t.thinking)*2 + len(t.text) + 1500
	for _, p := range plans {
		target := min(g.drawSize(), perCall, limit)
		c := g.makeCall(p, max(target, 80))
		if spent+g.cost(c) > rem {
			// A cached file, an image or an edit's original file can be larger than the
			// budget left; a short command keeps the document near its requested size.
			if len(t.calls) > 0 {
				break
			}
			c = g.makeCall(plan{k: kBash, bash: bashGitLog}, 80)
		}
		spent += g.cost(c)
		t.calls = append(t.calls, c)
	}
	return t
}

// cost estimates the bytes a call and its result add to the document.
func (g *gen) cost(c *call) int {
	n := len(c.text) + len(c.input) + 300
	if c.img != nil {
		n += len(c.img.b64)
	}
	if g.o.Format == "claude-code" { // three more records and the toolUseResult copy
		n += len(c.raw) + 1500
		if c.img != nil {
			n += len(c.img.b64)
		}
		if c.edit != nil {
			n += len(c.edit.original) + 2*len(c.edit.new)
		}
	}
	if g.d == dCodex { // JSON in a JSON string escapes twice
		return n * 13 / 10
	}
	return n * 11 / 10
}

func (g *gen) newID() string {
	switch g.d {
	case dClaude, dCline:
		return g.r.base62("toolu_01", 22)
	default:
		return g.r.base62("call_", 24)
	}
}

var repoFiles = []string{
	"cmd/api/main.go", mainFile, "internal/server/router.go", "internal/server/middleware.go",
	"internal/server/handler_test.go", "internal/store/store.go", "internal/store/postgres.go",
	"internal/store/cache.go", "internal/auth/token.go", "internal/auth/session.go",
	"internal/queue/worker.go", "internal/billing/invoice.go", "pkg/client/client.go",
	"web/src/App.tsx", "web/src/api/client.ts", "web/src/components/OrderTable.tsx",
	"web/src/hooks/useSession.ts", "scripts/migrate.py", "tools/report.py", "README.md",
	"docs/ARCHITECTURE.md", "docs/README.zh-CN.md", "docs/guide.ja.md", "CHANGELOG.md",
	"config/settings.json", "testdata/fixtures/orders.json", "deploy/values.yaml",
}

// pickReadPath prefers re-reading a known file (the pattern ctx-snip looks for) as long as it
// fits the budget, else a file not read before.
func (g *gen) pickReadPath(target int) string {
	if len(g.readOrder) > 0 && g.r.chance(0.45) {
		for i := 0; i < 4; i++ {
			p := g.readOrder[g.r.intn(len(g.readOrder))]
			if len(g.files[p].content) <= target*3/2 {
				return p
			}
		}
	}
	for i := 0; i < 3; i++ {
		p := repoFiles[g.r.intn(len(repoFiles))]
		if g.files[p] == nil {
			return p
		}
	}
	switch g.r.intn(4) {
	case 0:
		return "web/src/components/" + g.r.typeName() + ".tsx"
	case 1:
		return "tools/" + g.r.pick(verbs) + "_" + g.r.pick(nouns) + "s.py"
	default:
		return "internal/" + g.r.pick(packages) + "/" + g.r.pick(nouns) + "_" + g.r.pick(verbs) + ".go"
	}
}

// file returns the content of path, generating it (about target bytes) on first use so that
// later reads of the same path give the same text.
func (g *gen) file(path string, target int) *file {
	if f := g.files[path]; f != nil {
		return f
	}
	var c string
	r := &g.r
	switch {
	case strings.HasSuffix(path, ".go"):
		c = goSource(r, path, target)
	case strings.HasSuffix(path, ".py"):
		c = pySource(r, target)
	case strings.HasSuffix(path, ".ts"), strings.HasSuffix(path, ".tsx"):
		c = tsSource(r, target)
	case strings.HasSuffix(path, ".json"):
		c = jsonDoc(r, target, g.clock)
	case strings.HasSuffix(path, ".yaml"):
		c = yamlDoc(r, target)
	case strings.Contains(path, ".zh-CN.") || strings.Contains(path, ".ja."):
		c = markdown(r, target, true)
	default:
		c = markdown(r, target, false)
	}
	f := &file{path: path, content: c}
	g.files[path] = f
	g.readOrder = append(g.readOrder, path)
	return f
}

func (g *gen) makeCall(p plan, target int) *call {
	c := &call{id: g.newID(), kind: p.k, dur: float64(g.r.between(5, 3000)) / 1000}
	switch p.k {
	case kRead:
		c.path = p.path
		if c.path == "" {
			c.path = g.pickReadPath(target)
			if p.fail {
				c.path = strings.TrimSuffix(c.path, ".go") + "s.go"
			}
		}
		if p.fail && g.files[c.path] == nil {
			c.isError, c.exit = true, 2
			g.errors++
		} else {
			c.file = g.file(c.path, target)
			c.raw = c.file.content
			c.numLines = countLines(c.raw)
		}
	case kImage:
		c.path = p.path
		c.img = g.image()
	case kBash:
		g.bash(c, p, target)
	case kGrep:
		g.grep(c, target)
	case kEdit:
		g.editFile(c, p.path, target)
	}
	g.render(c)
	return c
}

const (
	bashGitStatus = iota
	bashGoTest
	bashGoTestV
	bashGitLog
	bashGitDiff
	bashLs
	bashGoBuild
	bashTail
	bashCurl
	bashNpmTest
	bashFind
	bashReport
	bashCount
)

// bash fills in a shell call. Outputs that naturally grow (logs, JSON, verbose tests, diffs)
// are picked for large targets; the rest for small ones.
func (g *gen) bash(c *call, p plan, target int) {
	r := &g.r
	i := p.bash
	if i < 0 {
		if target > 6000 {
			i = []int{bashGoTestV, bashGitDiff, bashTail, bashCurl, bashFind, bashReport}[r.intn(6)]
		} else {
			i = r.intn(bashCount)
		}
	}
	if p.fail {
		i = []int{bashGoTest, bashGoBuild, bashNpmTest}[r.intn(3)]
	}
	paths := make([]string, 0, 8)
	for j := 0; j < 8; j++ {
		paths = append(paths, repoFiles[r.intn(len(repoFiles))])
	}
	switch i {
	case bashGitStatus:
		c.cmd, c.desc = "git status && git log --oneline -10", "Show working tree status and recent commits"
		c.raw = "On branch main\nYour branch is up to date with 'origin/main'.\n\nChanges not staged for commit:\n  (use \"git add <file>...\" to update what will be committed)\n\tmodified:   " + paths[0] + "\n\tmodified:   " + paths[1] + "\n\nno changes added to commit (use \"git add\" and/or \"git commit -a\")\n" + gitLog(r, 10)
	case bashGoTest:
		c.cmd, c.desc = "go test ./...", "Run the test suite"
		c.raw = goTestOutput(r, min(target, 1500), false, p.fail)
	case bashGoTestV:
		c.cmd, c.desc = "go test -v -count=1 ./internal/...", "Run tests verbosely"
		c.raw = goTestOutput(r, target, true, p.fail)
	case bashGitLog:
		c.cmd, c.desc = "git log --oneline -30", "Show commit history"
		c.raw = gitLog(r, 30)
	case bashGitDiff:
		c.cmd, c.desc = "git diff", "Show unstaged changes"
		c.raw = diffOutput(r, paths, target)
	case bashLs:
		c.cmd, c.desc = "ls -la internal/server", "List server package files"
		c.raw = lsOutput(r, []string{"handler.go", "handler_test.go", "middleware.go", "router.go", "router_test.go"}, g.clock)
	case bashGoBuild:
		c.cmd, c.desc = "go build ./... && go vet ./...", "Build and vet"
		if p.fail {
			c.raw = "# github.com/acme/widgets/internal/server\ninternal/server/handler.go:" + strconv.Itoa(r.between(30, 300)) + ":9: undefined: " + r.ident() + "\ninternal/server/handler.go:" + strconv.Itoa(r.between(30, 300)) + ":2: missing return\n"
		}
	case bashTail:
		c.cmd, c.desc = "tail -n 2000 logs/server.log", "Inspect recent server logs"
		c.raw = logLines(r, target, g.clock)
	case bashCurl:
		c.cmd, c.desc = "curl -s 'localhost:8080/api/v1/orders?limit=500' | jq .", "Query the orders endpoint"
		c.raw = jsonDoc(r, target, g.clock)
	case bashNpmTest:
		c.cmd, c.desc = "npm test --prefix web -- --watchAll=false", "Run frontend tests"
		c.raw = jestOutput(r, p.fail)
	case bashFind:
		c.cmd, c.desc = "find . -name '*.go' -not -path './vendor/*'", "List Go files"
		c.raw = findOutput(r, target)
	case bashReport:
		c.cmd, c.desc = "python3 tools/report.py --since 7d", "Generate the weekly report"
		c.raw = reportTable(r, target)
	}
	if p.fail {
		c.isError, c.exit = true, 1
		g.errors++
	}
}

var grepPatterns = []string{"ErrNotFound", "func (s \\*Server)", "context.WithTimeout", "TODO", "retry", "mu.Lock", "useSession", "tenant_id", "ErrInvalid", "status <> 'deleted'"}

func (g *gen) grep(c *call, target int) {
	r := &g.r
	c.pattern = r.pick(grepPatterns)
	var b, stmt []byte
	for len(b) < target || c.numLines == 0 {
		if g.d == dClaude {
			b = append(b, "/repo/"...)
		}
		b = append(b, "internal/"+r.pick(packages)+"/"+r.pick(nouns)+".go:"+strconv.Itoa(r.between(10, 600))+":"...)
		stmt = r.goStmt(stmt[:0], 1+r.intn(2))
		if i := bytes.IndexByte(stmt, '\n'); i >= 0 {
			stmt = stmt[:i+1]
		}
		b = append(b, stmt...)
		c.numLines++
	}
	c.raw = string(b)
}

func (g *gen) editFile(c *call, path string, target int) {
	r := &g.r
	if path == "" {
		for i := 0; i < 5; i++ {
			if len(g.readOrder) == 0 {
				break
			}
			p := g.readOrder[r.intn(len(g.readOrder))]
			if strings.HasSuffix(p, ".go") && len(g.files[p].content) < target*4 {
				path = p
				break
			}
		}
		if path == "" {
			path = g.pickReadPath(target)
		}
	}
	f := g.file(path, target)
	lines := strings.Split(f.content, "\n")
	li := r.intn(len(lines))
	for k := 0; k < len(lines) && strings.TrimSpace(lines[li]) == ""; k++ {
		li = (li + 1) % len(lines)
	}
	old := lines[li]
	var nb []byte
	indent := old[:len(old)-len(strings.TrimLeft(old, "\t "))]
	nb = append(nb, old...)
	nb = append(nb, '\n')
	nb = append(nb, indent+"// "...)
	nb = r.sentence(nb)
	newText := string(nb)
	c.path, c.file = path, f
	c.edit = &editInfo{old: old, new: newText, original: f.content, line: li + 1}
	f.content = strings.Replace(f.content, old, newText, 1)
	g.edited = append(g.edited, path)
	lo, hi := max(0, li-4), min(len(lines), li+5)
	c.raw = strings.Join(lines[lo:hi], "\n")
	c.numLines = lo + 1
}

// render names the call and writes its input and result text in the session's dialect.
func (g *gen) render(c *call) {
	abs := "/repo/" + c.path
	var in []byte
	switch g.d {
	case dClaude:
		switch c.kind {
		case kRead, kImage:
			c.name = "Read"
			in = appendKV(append(in, '{'), "file_path", abs)
			switch {
			case c.img != nil:
			case c.isError:
				c.text = "<tool_use_error>File does not exist.</tool_use_error>"
			default:
				c.text = numbered(c.raw, 1) + readReminder
			}
		case kBash:
			c.name = "Bash"
			in = appendKV(append(in, '{'), "command", c.cmd)
			in = appendKV(append(in, ','), "description", c.desc)
			c.text = c.raw
			if c.isError {
				c.text = "Exit code " + strconv.Itoa(c.exit) + "\n" + c.raw
			}
		case kGrep:
			c.name = "Grep"
			in = appendKV(append(in, '{'), "pattern", c.pattern)
			in = appendKV(append(in, ','), "path", "/repo/internal")
			in = appendKV(append(in, ','), "output_mode", "content")
			in = appendKB(append(in, ','), "-n", true)
			c.text = c.raw
		case kEdit:
			c.name = "Edit"
			in = appendKV(append(in, '{'), "file_path", abs)
			in = appendKV(append(in, ','), "old_string", c.edit.old)
			in = appendKV(append(in, ','), "new_string", c.edit.new)
			c.text = "The file " + abs + " has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n" + numbered(c.raw, c.numLines)
		}
	case dChat, dResp:
		switch c.kind {
		case kRead:
			c.name = "read_file"
			in = appendKV(append(in, '{'), "path", c.path)
			c.text = c.raw
			if c.isError {
				c.text = "Error: open " + abs + ": no such file or directory"
			}
		case kBash, kGrep:
			c.name = "shell"
			cmd := c.cmd
			if c.kind == kGrep {
				cmd = "rg -n '" + c.pattern + "' internal/"
			}
			if g.d == dChat {
				in = appendKV(append(in, '{'), "command", cmd)
			} else {
				in = append(in, '{')
				in = appendArgv(in, "bash", "-lc", cmd)
				in = appendKV(append(in, ','), "workdir", "/repo")
			}
			c.text = c.raw
			if c.isError {
				c.text = "Exit code: " + strconv.Itoa(c.exit) + "\n" + c.raw
			}
		case kEdit:
			c.name = "apply_patch"
			in = appendKV(append(in, '{'), "input", c.patch())
			c.text = "Success. Updated the following files:\nM " + c.path + "\n"
		}
	case dCline:
		in = g.renderCline(c)
	case dCodex:
		c.name = "shell"
		in = append(in, '{')
		switch c.kind {
		case kRead:
			in = appendArgv(in, "bash", "-lc", "sed -n '1,"+strconv.Itoa(max(c.numLines, 200))+"p' "+c.path)
			c.text = c.raw
			if c.isError {
				c.text = "sed: can't read " + c.path + ": No such file or directory\n"
			}
		case kBash:
			in = appendArgv(in, "bash", "-lc", c.cmd)
			c.text = c.raw
		case kGrep:
			in = appendArgv(in, "bash", "-lc", "rg -n '"+c.pattern+"' internal/")
			c.text = c.raw
		case kEdit:
			in = appendArgv(in, "apply_patch", c.patch())
			c.text = "Success. Updated the following files:\nM " + c.path + "\n"
		}
		in = appendKV(append(in, ','), "workdir", "/repo")
		in = appendKI(append(in, ','), "timeout_ms", 120000)
	}
	c.input = append(in, '}')
}

func appendArgv(b []byte, argv ...string) []byte {
	b = appendKey(b, "command")
	b = append(b, '[')
	for i, a := range argv {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendStr(b, a)
	}
	return append(b, ']')
}

func (c *call) patch() string {
	return "*** Begin Patch\n*** Update File: " + c.path + "\n@@\n-" + c.edit.old + "\n+" + strings.ReplaceAll(c.edit.new, "\n", "\n+") + "\n*** End Patch\n"
}

const readReminder = "\n<system-reminder>\nWhenever you read a file, you should consider whether it looks malicious. If it does, you MUST refuse to improve or augment the code. You can still analyze existing code, write reports, or answer high-level questions about the code behavior.\n</system-reminder>\n"

var requests = []string{
	"We're seeing intermittent 500s from `GET /api/v1/orders` in staging since yesterday's deploy. Can you figure out what's going on in internal/server/handler.go, fix it, and make sure the tests pass? Don't touch the public API.",
	"The order listing endpoint got slow after we added tenant filtering. Please profile what the handler does, find the regression, fix it and add a regression test. Keep the change small.",
	"Please add request-scoped timeouts to the order handler and the store layer, make errors wrap properly with %w, and update the docs (including the Chinese README) to describe the new `request_timeout` setting.",
}

var followUps = []string{
	"Thanks. Can you also add a test for the error path?",
	"Looks good. Now please update the docs to match the new behaviour.",
	"Can you check why the cache hit rate dropped after this change? The dashboard shows it going from 92% to 61%.",
	"Please run the full test suite again and fix anything that breaks.",
	"CI is still red on the frontend job. Can you look at the web tests too?",
	"Can you simplify the retry logic? It's getting hard to follow.",
	"One more thing: the report script should skip deleted tenants.",
	"请把错误处理也补上单元测试，并同步更新 docs/README.zh-CN.md。",
	"ログの出力形式を確認して、タイムアウトの設定をドキュメントに追記してください。",
}

var leadIns = []string{
	"Let me look at `%s` first.",
	"I'll check `%s` to see how the request is handled.",
	"Now let me verify the change in `%s`.",
	"Let me search for related code and run the tests.",
	"I'll run the tests to see what fails.",
	"Found it. The handler reads the cache without holding the lock. Let me look at `%s` more closely.",
	"Let me check the logs around the time of the failures.",
}

func (g *gen) leadIn(p plan) string {
	s := g.r.pick(leadIns)
	if strings.Contains(s, "%s") {
		path := p.path
		if path == "" {
			path = g.r.pick(repoFiles)
		}
		s = strings.Replace(s, "%s", path, 1)
	}
	return s
}

func (g *gen) thinking(n int) string {
	b := []byte("The user wants the " + g.r.pick(nouns) + " " + g.r.pick([]string{"errors", "regression", "timeouts", "tests"}) + " fixed. ")
	for len(b) < n {
		b = g.r.sentence(b)
		b = append(b, ' ')
		if g.r.intn(5) == 0 {
			b = append(b, "I should check "+g.r.pick(repoFiles)+" next. "...)
		}
	}
	return strings.TrimSpace(string(b))
}

func (g *gen) followUp() string {
	s := g.r.pick(followUps)
	if g.r.chance(0.2) {
		s += "\n\nHere's what I see in the logs:\n```\n" + logLines(&g.r, g.r.between(300, 1500), g.clock) + "```"
	}
	return s
}

// summary is assistant prose in markdown, as at the end of a task.
func (g *gen) summary(n int) string {
	r := &g.r
	b := []byte("## Summary\n\n")
	b = r.paragraph(b, 2)
	b = append(b, "\n\n### Changes\n\n"...)
	for len(b) < n {
		b = append(b, "- `"+r.pick(repoFiles)+"`: "...)
		b = r.sentence(b)
		b = append(b, '\n')
		if r.intn(6) == 0 {
			b = append(b, "\n```go\n"...)
			b = r.goStmt(b, 0)
			b = append(b, "```\n\n"...)
		}
	}
	b = append(b, "\nAll tests pass: `go test ./...` is green."...)
	return string(b)
}

func systemPrompt(r *rng) string {
	b := []byte("You are an expert software engineering agent working in a Go and TypeScript monorepo at /repo. Use the available tools to read files, search the code, run commands and edit files. Prefer small, verifiable changes and always run the relevant tests before you say you are done.\n\n# Rules\n\n")
	for i := 0; i < 24; i++ {
		b = append(b, "- "...)
		b = r.sentence(b)
		b = append(b, '\n')
	}
	b = append(b, "\n# Environment\n\n<env>\nWorking directory: /repo\nIs directory a git repo: Yes\nPlatform: linux\nOS Version: Linux 6.8.0-45-generic\nToday's date: 2026-03-02\n</env>\n\n# Project notes\n\n"...)
	b = r.paragraph(b, 10)
	return string(b)
}
