package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alecthomas/kong"
	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/transcript"
	"github.com/mattn/go-isatty"
	"golang.org/x/term"
)

// Tool describes one binary. Build a fresh Tool for every [Main] call:
// parsing writes into Grammar, so a Tool must not be shared between
// concurrent runs.
type Tool struct {
	Name    string    // "ctx-count"
	Summary string    // one line, shown first in --help
	help    string    // longer description for --help (may be empty)
	Grammar any       // pointer to the tool's flag struct, which embeds Common
	Vars    kong.Vars // extra interpolation variables for the grammar's tags
	run     func(ctx *Context) error

	// examples are shown last in --help, each a command line and what it does.
	examples []Example
	// omit names the Common flags (long names) the tool does not take: they are left out
	// of --help and of shell completions. They still parse, so that one set of CTX_*
	// variables (CTX_STORE) or one set of flags can serve every tool of a pipeline; a tool
	// that refuses one outright (ctx-count -i) says so when it runs.
	//
	// "file" names the file arguments: a tool that reads no document (ctx-proxy) omits
	// them, and they are taken out of the grammar rather than hidden, so a file argument
	// is refused as any unexpected argument is (exit 2). No pipeline shares them.
	omit []string
	// args, when set, renames the file arguments for a tool whose arguments are not
	// documents (ctx-recall's query): their name and help in --help and usage errors.
	args *Args
}

// Args names a tool's positional arguments (Tool.args).
type Args struct{ Name, Help string }

// arguer is a grammar whose file arguments mean something else: [Command] copies its
// Args into Tool.args.
type arguer interface{ FileArgs() Args }

// Example is one command line of a tool's --help.
type Example struct {
	Does    string // what it does, one line
	Command string // the command line, as typed in a shell
}

// exampler is a grammar that has examples for --help: [Command] copies them into
// Tool.examples.
type exampler interface{ Examples() []Example }

// omitter is a grammar that names the Common flags its tool does not take: [Command]
// copies them into Tool.omit.
type omitter interface{ OmitCommon() []string }

// Command describes a tool whose flags are an F, which embeds Common: a fresh F for each
// call, handed to run with the run's Context.
func Command[F any](name, summary, help string, run func(*Context, *F) error) *Tool {
	f := new(F)
	t := &Tool{Name: name, Summary: summary, help: help, Grammar: f, run: func(c *Context) error { return run(c, f) }}
	// Methods of the grammar, not arguments, so that a tool adds its examples in a file of
	// its own without touching the line that builds its Tool.
	if e, ok := any(f).(exampler); ok {
		t.examples = e.Examples()
	}
	if o, ok := any(f).(omitter); ok {
		t.omit = o.OmitCommon()
	}
	if a, ok := any(f).(arguer); ok {
		args := a.FileArgs()
		t.args = &args
	}
	return t
}

// terminal is checked first when the runner decides whether stdin or stdout
// is a terminal: a reader or writer that implements it answers for itself
// (tests use it to force TTY behaviour). Otherwise an *os.File is tested
// with isatty (including Cygwin/MSYS ptys), and anything else is not a
// terminal.
type terminal interface {
	IsTerminal() bool
}

func isTerminal(x any) bool {
	switch v := x.(type) {
	case terminal:
		return v.IsTerminal()
	case *os.File:
		if v == nil {
			return false
		}
		fd := v.Fd()
		return isatty.IsTerminal(fd) || isatty.IsCygwinTerminal(fd)
	}
	return false
}

// columns is the terminal's width: COLUMNS when it is a positive number (a user's
// override, and what a test sets), else the size of the first of the writers that is a
// terminal, else 0.
func columns(getenv func(string) string, writers ...io.Writer) int {
	if n, err := strconv.Atoi(strings.TrimSpace(getenv("COLUMNS"))); err == nil && n > 0 {
		return n
	}
	for _, w := range writers {
		if f, ok := w.(*os.File); ok && f != nil && isTerminal(f) {
			if n, _, err := term.GetSize(int(f.Fd())); err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}

// exitSignal is how kong's Exit hook (called after --help and --version
// have printed) unwinds out of Parse without ending the process.
type exitSignal struct{ code int }

// MainFunc is a ctxkit command's entry point, as each tier's Main has it: what a tool that
// runs other tools in this process (ctx-replay's pipeline, ctx-count --savings) calls.
type MainFunc func(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int

// Main runs tool with the command-line arguments args (without the program
// name) and returns the exit status. getenv supplies the environment: the
// CTX_* flag variables, NO_COLOR and TERM are read only through it, never
// from the process, so tests are hermetic; main passes os.Getenv. A nil
// getenv means an empty environment. An empty variable counts as unset.
func Main(tool *Tool, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return (&prepared{tool: tool}).main(args, stdin, stdout, stderr, getenv)
}

// prepared is a tool with its command-line parser, built on its first run and kept for
// the next ones (Reusing).
type prepared struct {
	tool   *Tool
	parser *kong.Kong
	env    *envResolver
}

func (p *prepared) main(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	tool := p.tool
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	fail := func(err error) int {
		code, hint := classify(err)
		report(stderr, tool.Name, err, hint)
		return code
	}

	if p.parser == nil {
		parser, env, err := newParser(tool, stdout, stderr, getenv)
		if err != nil {
			// A grammar that does not build is a bug in the tool, not the user's.
			return fail(fmt.Errorf("internal: build command line: %w", err))
		}
		p.parser, p.env = parser, env
	} else {
		p.reset(stdout, stderr, getenv)
	}
	parser, env := p.parser, p.env
	exited, code, given, err := parse(parser, env, args)
	if exited {
		if code != ExitOK {
			return ExitUsage
		}
		return ExitOK
	}
	if err != nil {
		return fail(WithHint(Usagef("%w", err), fmt.Sprintf("see '%s --help'", tool.Name)))
	}

	common, err := settle(tool, given, getenv)
	if err != nil {
		return fail(err)
	}

	out := &heldOutput{}
	if sized, ok := stdin.(interface{ Len() int }); ok {
		out.hint = sized.Len()
	}
	defer out.close()
	c := &Context{
		tool:       tool,
		Common:     common,
		stdin:      stdin,
		Stdout:     out,
		Stderr:     stderr,
		stdinTTY:   isTerminal(stdin),
		StdoutTTY:  isTerminal(stdout),
		StderrTTY:  isTerminal(stderr),
		Getenv:     getenv,
		Now:        time.Now,
		version:    Version(),
		out:        out,
		realStdout: stdout,
		given:      given,
	}
	c.Color = c.StdoutTTY && getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
	c.Columns = columns(getenv, stdout, stderr)
	if common.Tokenizer == "api" {
		c.readWhole = true // the endpoint counts the document as it would be sent
	}
	// Removes temp files of -o/--in-place writes that were never committed,
	// also when Run panics.
	defer c.discard()

	runErr := runGuarded(tool, c)
	code, hint := classify(runErr)
	if code == ExitOK || code == ExitCheck || keepsOutput(runErr) {
		c.flushCounts()
		if err := c.commit(); err != nil {
			return fail(err)
		}
		if _, err := out.WriteTo(stdout); err != nil {
			return fail(RuntimeError(fmt.Errorf("write stdout: %w", err)))
		}
	}
	if runErr != nil {
		report(stderr, tool.Name, runErr, hint)
	}
	return code
}

// checkAPIKey refuses --tokenizer api without the key it needs.
func checkAPIKey(common *Common, getenv func(string) string) error {
	if common.Tokenizer == "api" && getenv(apiKeyVar) == "" {
		return WithHint(Usagef("--tokenizer api needs an Anthropic API key: %s is not set", apiKeyVar),
			"set it, or count offline with --tokenizer auto (the default)")
	}
	return nil
}

// Configure reads tool's command line (args and the CTX_ variables getenv gives) as Main
// would, without running it: for a tool that runs the tier as a stage of its own pipeline
// (package pipeline), which reads the tier's options from the Grammar and the returned
// Context (its Common flags, Given). --help and --version are refused: a stage prints
// nothing. Errors are usage errors.
func Configure(tool *Tool, args []string, getenv func(string) string) (*Context, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	parser, env, err := newParser(tool, io.Discard, io.Discard, getenv)
	if err != nil {
		return nil, fmt.Errorf("internal: build command line: %w", err)
	}
	exited, _, given, err := parse(parser, env, args)
	switch {
	case exited:
		return nil, Usagef("%s: --help and --version do not run in a pipeline", tool.Name)
	case err != nil:
		return nil, Usagef("%s: %w", tool.Name, err)
	}
	common, err := settle(tool, given, getenv)
	if err != nil {
		return nil, err
	}
	return &Context{tool: tool, Common: common, stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard,
		Getenv: getenv, Now: time.Now, version: Version(), given: given}, nil
}

// settle checks the Common flags a parse of tool's command line set (given: the flags the
// user gave) and fills in what they default to: for Main and Configure alike.
func settle(tool *Tool, given map[string]bool, getenv func(string) string) (*Common, error) {
	common := commonOf(tool)
	if common == nil {
		return nil, errors.New("internal: grammar does not embed cli.Common")
	}
	if err := validateCommon(tool.Name, common); err != nil {
		return nil, err
	}
	if common.Store == "" && !given["store"] {
		common.Store = defaultStore(getenv)
	}
	if err := checkAPIKey(common, getenv); err != nil {
		return nil, err
	}
	return common, nil
}

// runGuarded runs the tool with the memory faults of its goroutine made errors: an input
// read in place (a mapped file) that another program cuts short meanwhile fails the run
// like an input changed under it (exit 4) instead of crashing the process.
func runGuarded(tool *Tool, c *Context) (err error) {
	defer func() {
		if errors.Is(err, transcript.ErrCutShort) {
			err = RuntimeError(err)
		}
	}()
	defer transcript.GuardFaults()()
	defer transcript.RecoverFault(&err)
	return tool.run(c)
}

// Reusing is newTool's Main for a caller that runs the tool many times in one process
// (ctx-replay's and ctx-proxy's pipeline, every request): building kong's parser is about
// a third of the CPU of a stage on a small request, so each parser built is kept, in a free
// list of the returned function's own, so that concurrent runs each have one (as many as
// ever ran at once). Not a sync.Pool: that empties at every garbage collection, which a
// pipeline on a large document causes several times a run. A run behaves as under Main: it
// starts from a grammar as new as a fresh Tool's and from no flags given.
func Reusing(newTool func() *Tool) MainFunc {
	var mu sync.Mutex
	var free []*prepared
	return func(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
		var p *prepared
		mu.Lock()
		if n := len(free); n > 0 {
			p, free = free[n-1], free[:n-1]
		}
		mu.Unlock()
		if p == nil {
			p = &prepared{tool: newTool()}
		}
		code := p.main(args, stdin, stdout, stderr, getenv)
		// Not reached when the run panics: a parser left halfway through a run is dropped.
		mu.Lock()
		free = append(free, p)
		mu.Unlock()
		return code
	}
}

// reset readies a parser used before for a new run: the grammar zeroed as new(F) made it
// (kong's Parse then sets every flag's default; zeroing also clears any field without a
// flag that a run wrote), no value marked as given (kong's xor groups read that), the run's
// writers and environment.
func (p *prepared) reset(stdout, stderr io.Writer, getenv func(string) string) {
	g := reflect.ValueOf(p.tool.Grammar).Elem()
	g.Set(reflect.Zero(g.Type()))
	kong.Visit(p.parser.Model.Node, func(n kong.Visitable, next kong.Next) error {
		if v, ok := n.(*kong.Value); ok {
			v.Set = false
		}
		return next(nil)
	})
	p.parser.Stdout, p.parser.Stderr = stdout, stderr
	p.env.getenv, p.env.resolved = getenv, map[string]bool{}
}

// report prints err as "name: error: msg" plus an optional hint line. The
// message is printed as given: style (lowercase, no final period) is the
// caller's job. Its control characters are escaped (human.Safe): a message names
// files and quotes documents and servers.
func report(w io.Writer, name string, err error, hint string) {
	var b strings.Builder
	if msg := err.Error(); msg != "" {
		fmt.Fprintf(&b, "%s: error: %s\n", name, human.Safe(msg))
	}
	if hint != "" {
		fmt.Fprintf(&b, "hint: %s\n", human.Safe(hint))
	}
	io.WriteString(w, b.String())
}

func commonOf(tool *Tool) *Common {
	if g, ok := tool.Grammar.(interface{ CommonFlags() *Common }); ok {
		return g.CommonFlags()
	}
	return nil
}

func validateCommon(name string, c *Common) error {
	if c.StatsFile != "" {
		c.Stats = true
	}
	switch {
	case c.Output != "" && c.InPlace:
		return WithHint(Usagef("-o/--output and -i/--in-place cannot be used together"),
			fmt.Sprintf("see '%s --help'", name))
	case c.Redact && c.NoRedact:
		return WithHint(Usagef("--redact and --no-redact cannot be used together"),
			"--redact redacts the output document as well; --no-redact redacts nothing")
	case c.InPlace && len(c.Files) == 0 && !c.Latest:
		return WithHint(Usagef("--in-place needs file arguments"),
			fmt.Sprintf("name the files to edit: %s -i FILE...", name))
	case c.InPlace:
		for _, f := range c.Files {
			if f == "-" {
				return Usagef("--in-place cannot edit stdin (%q)", f)
			}
		}
	}
	return nil
}

func parse(p *kong.Kong, env *envResolver, args []string) (exited bool, code int, given map[string]bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, ok := r.(exitSignal)
			if !ok {
				panic(r)
			}
			exited, code = true, s.code
		}
	}()
	kc, err := p.Parse(args)
	if err == nil {
		// Which flags the user gave (on the command line or through CTX_*), for the few
		// decisions a default must not make (see Context.Given). kong's Value.Set is true
		// for defaults too, so the command line's path is read instead.
		given = env.resolved
		for _, el := range kc.Path {
			if el.Flag != nil {
				given[el.Flag.Name] = true
			}
		}
	}
	return false, 0, given, err
}

func newParser(tool *Tool, stdout, stderr io.Writer, getenv func(string) string) (*kong.Kong, *envResolver, error) {
	vars := kong.Vars{}
	for k, v := range tool.Vars {
		vars[k] = v
	}
	vars["version"] = tool.Name + " " + Version()

	desc := tool.Summary
	if tool.help != "" {
		desc += "\n\n" + tool.help
	}
	env := &envResolver{getenv: getenv, names: map[*kong.Value][]string{}, resolved: map[string]bool{}}
	p, err := kong.New(tool.Grammar,
		kong.Name(tool.Name),
		kong.Description(desc),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(exitSignal{code}) }),
		vars,
		kong.ExplicitGroups([]kong.Group{{Key: "common", Title: "Common flags:"}}),
		kong.ConfigureHelp(kong.HelpOptions{NoExpandSubcommands: true}),
		kong.ValueFormatter(env.helpValue),
		kong.Help(examplesHelp(tool.examples)),
		kong.Resolvers(env),
	)
	if err != nil {
		return nil, nil, err
	}
	if err := omit(p.Model.Node, tool.omit); err != nil {
		return nil, nil, err
	}
	if tool.args != nil {
		for _, a := range p.Model.Node.Positional {
			if a.Name == filesArg {
				a.Name, a.Help = tool.args.Name, tool.args.Help
			}
		}
	}
	env.takeOver(p.Model.Node)
	return p, env, nil
}

// omit hides the flags named in names and takes out the file arguments when names has
// "file"; a name that is neither a Common flag nor "file" is the tool's bug.
func omit(n *kong.Node, names []string) error {
	for _, name := range names {
		if name == filesArg {
			// kong has no hidden positional: one left in the grammar shows in --help's
			// usage line and its Arguments section.
			n.Positional = slices.DeleteFunc(n.Positional, func(p *kong.Positional) bool { return p.Name == filesArg })
			continue
		}
		found := false
		for _, f := range n.Flags {
			if f.Name == name && f.Group != nil && f.Group.Key == "common" {
				f.Hidden, found = true, true
			}
		}
		if !found {
			return fmt.Errorf("omit %q: not a common flag", name)
		}
	}
	return nil
}

// examplesHelp is kong's help followed by an "Examples:" section.
func examplesHelp(examples []Example) kong.HelpPrinter {
	return func(options kong.HelpOptions, ctx *kong.Context) error {
		if err := kong.DefaultHelpPrinter(options, ctx); err != nil {
			return err
		}
		if len(examples) == 0 {
			return nil
		}
		var b strings.Builder
		b.WriteString("\nExamples:\n")
		for i, e := range examples {
			if i > 0 {
				b.WriteByte('\n')
			}
			fmt.Fprintf(&b, "  # %s\n  %s\n", e.Does, e.Command)
		}
		_, err := io.WriteString(ctx.Stdout, b.String())
		return err
	}
}

// envResolver feeds CTX_* variables to kong through getenv. kong reads env
// tags with os.LookupEnv, which a test cannot replace without racing other
// tests, so after the model is built the runner moves every flag's env
// names out of kong's reach into names, resolves them here (a flag given on
// the command line still wins) and shows them in --help itself.
type envResolver struct {
	getenv   func(string) string
	names    map[*kong.Value][]string
	resolved map[string]bool // flags set from a variable, by name
}

func (r *envResolver) takeOver(n *kong.Node) {
	for _, f := range n.Flags {
		if len(f.Tag.Envs) > 0 {
			r.names[f.Value] = append([]string(nil), f.Tag.Envs...)
			f.Tag.Envs, f.Envs = nil, nil
		}
	}
	for _, p := range n.Positional {
		if len(p.Tag.Envs) > 0 {
			r.names[p] = append([]string(nil), p.Tag.Envs...)
			p.Tag.Envs = nil
		}
	}
	for _, child := range n.Children {
		r.takeOver(child)
	}
}

func (r *envResolver) Validate(*kong.Application) error { return nil }

func (r *envResolver) Resolve(_ *kong.Context, _ *kong.Path, flag *kong.Flag) (any, error) {
	for _, name := range r.names[flag.Value] {
		v := r.getenv(name)
		if v == "" {
			continue
		}
		// Check the value here so the message names the variable; kong
		// would blame the flag the user never typed.
		if flag.Enum != "" {
			ok := false
			for _, e := range flag.EnumSlice() {
				ok = ok || e == v
			}
			if !ok {
				return nil, fmt.Errorf("must be one of %q but got %q (from $%s)", flag.EnumSlice(), v, name)
			}
		}
		typ := flag.Target.Type()
		scratch := reflect.New(typ).Elem()
		if typ.Kind() == reflect.Pointer { // an optional value (*Count): decode into a fresh one
			scratch.Set(reflect.New(typ.Elem()))
		}
		dc := &kong.DecodeContext{Value: flag.Value, Scan: kong.ScanFromTokens(kong.Token{Type: kong.FlagValueToken, Value: v})}
		if err := flag.Mapper.Decode(dc, scratch); err != nil {
			return nil, fmt.Errorf("%w (from $%s)", err, name)
		}
		r.resolved[flag.Name] = true
		return v, nil
	}
	return nil, nil
}

// helpValue is kong.DefaultHelpValueFormatter with the flag's default (kong shows none)
// and the env names this resolver took over: "Help text (default 85%) ($CTX_X)."
func (r *envResolver) helpValue(v *kong.Value) string {
	var parts []string
	// A switch's default (false) and an empty one say nothing; a help text that already
	// names its default (through ${default}) is not told twice.
	if v.Default != "" && !(v.IsBool() && v.Default == "false") && !kong.HasInterpolatedVar(v.OrigHelp, "default") {
		parts = append(parts, "(default "+v.Default+")")
	}
	if envs := r.names[v]; len(envs) > 0 {
		vars := make([]string, len(envs))
		for i, e := range envs {
			vars[i] = "$" + e
		}
		parts = append(parts, "("+strings.Join(vars, ", ")+")")
	}
	if len(parts) == 0 {
		return v.Help
	}
	suffix := strings.Join(parts, " ")
	switch {
	case strings.HasSuffix(v.Help, "."):
		return v.Help[:len(v.Help)-1] + " " + suffix + "."
	case v.Help == "":
		return suffix
	default:
		return v.Help + " " + suffix
	}
}
