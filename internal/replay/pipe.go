package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/pipeline"
	"github.com/ctxkit/ctxkit/internal/tiers"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Pipeline is the --pipe text, ready to run on one request. When every stage is a ctxkit
// filter with plain arguments it runs in this process (no fork, no PATH lookup, the same
// bytes); anything else (another program, shell syntax) runs as "sh -c TEXT".
type Pipeline struct {
	Text   string
	stages []stage // nil: run by the shell

	tiersOnce sync.Once // Tiers'
	tiers     *pipeline.Pipeline
	tiersErr  error
}

type stage struct {
	name string
	main cli.MainFunc
	args []string
}

// InProcess reports whether the pipeline runs in this process.
func (p *Pipeline) InProcess() bool { return p.stages != nil }

// ParsePipe reads a pipeline of filters separated by "|". tools are the commands that can
// run in process, by name.
func ParsePipe(text string, tools map[string]cli.MainFunc) (*Pipeline, error) {
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("empty pipeline")
	}
	p := &Pipeline{Text: text}
	parts, ok := splitPlain(text)
	if !ok {
		return p, nil
	}
	var stages []stage
	for _, words := range parts {
		if len(words) == 0 {
			return nil, fmt.Errorf("pipeline %q has an empty stage", text)
		}
		main, known := tools[filepath.Base(words[0])]
		if !known {
			return p, nil
		}
		stages = append(stages, stage{name: filepath.Base(words[0]), main: main, args: words[1:]})
	}
	p.stages = stages
	return p, nil
}

// splitPlain splits a pipeline into its stages' words, or says it needs a shell: quotes
// are understood, any other shell syntax ($, redirections, ;, &&, globs, subshells) is not.
func splitPlain(text string) ([][]string, bool) {
	var stages [][]string
	var words []string
	var word strings.Builder
	inWord := false
	endWord := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			endWord()
		case c == '|':
			if i+1 < len(text) && text[i+1] == '|' {
				return nil, false
			}
			endWord()
			stages = append(stages, words)
			words = nil
		case c == '\'':
			j := strings.IndexByte(text[i+1:], '\'')
			if j < 0 {
				return nil, false
			}
			word.WriteString(text[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == '"':
			j := strings.IndexByte(text[i+1:], '"')
			if j < 0 || strings.ContainsAny(text[i+1:i+1+j], "$`\\") {
				return nil, false
			}
			word.WriteString(text[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case strings.IndexByte("$`\\<>;&(){}*?[]~#=", c) >= 0 && !(c == '=' && inWord):
			return nil, false
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	endWord()
	stages = append(stages, words)
	return stages, true
}

// Stages is the pipeline as an in-process pipeline over one parsed document: each stage
// that is a tier the registry makes a value of (tiers.Tier.New), from its arguments and
// the environment getenv gives, as that value; the others (ctx-repair, ctx-count, a
// tier's dry run, a command line the tier refuses, which its command then reports) as
// their commands. Its Env counts as the stages would. nil for a pipeline the shell runs.
// statsFile is where the commands write their --stats lines (CTX_STATS_FILE).
func (p *Pipeline) Stages(getenv func(string) string, statsFile string) (*pipeline.Pipeline, error) {
	if p.stages == nil {
		return nil, nil
	}
	env, err := cli.StageEnv(getenv)
	if err != nil {
		return nil, err
	}
	pp := &pipeline.Pipeline{StatsFile: statsFile, Env: env}
	for _, s := range p.stages {
		st := pipeline.Stage{Name: s.name, Main: pipeline.MainFunc(s.main), Args: s.args}
		if t, ok := tiers.Lookup(s.name); ok && t.New != nil {
			if tier, err := t.New(s.args, getenv); err == nil {
				st.Tier = tier
			}
		}
		pp.Stages = append(pp.Stages, st)
	}
	return pp, nil
}

// Tiers is Stages for a server that runs the pipeline on every request with one
// environment: made on the first call and kept (getenv must give the same on every call).
// The stages' tiers are shared by the requests, which may run at once.
func (p *Pipeline) Tiers(getenv func(string) string) (*pipeline.Pipeline, error) {
	p.tiersOnce.Do(func() { p.tiers, p.tiersErr = p.Stages(getenv, "") })
	return p.tiers, p.tiersErr
}

// RunInProcessFrom reads in (as reading says) and runs it through stages (Pipeline.Stages)
// at clock: the last document and what each stage did (Firings reads what they saved). in is the next request after the one seed is
// the pipeline's output of (nil: none): what in holds of seed's messages is neither parsed
// nor counted again (pipeline.NewFrom); the output is the same bytes either way. getenv is
// the environment the stages that run as their commands see. A stage that fails is a
// StageError.
func RunInProcessFrom(ctx context.Context, stages *pipeline.Pipeline, seed *pipeline.Doc, in []byte, reading transcript.Options, clock pipeline.Clock, getenv func(string) string) (*pipeline.Doc, []pipeline.Result, error) {
	d, err := pipeline.NewFrom(seed, in, reading, stages.Env, clock)
	if err != nil {
		return nil, nil, &StageError{Stage: stages.Stages[0].Name, Code: cli.ExitInput, Stderr: err.Error()}
	}
	d, results, err := stages.Run(ctx, d, getenv)
	if err != nil {
		var se *pipeline.StageError
		if errors.As(err, &se) {
			msg := se.Stderr
			if se.Err != nil {
				msg = se.Err.Error()
			}
			return nil, nil, &StageError{Stage: se.Stage, Code: se.Code, Stderr: msg}
		}
		return nil, nil, err
	}
	return d, results, nil
}

// StageError is a pipeline that failed: which stage (in process) and what it said.
type StageError struct {
	Stage  string // the command, or "sh -c" for a shell pipeline
	Code   int    // its exit status; -1 when it did not exit (killed, timed out)
	Stderr string
}

func (e *StageError) Error() string {
	msg := errorLine(e.Stderr)
	if msg == "" {
		msg = "no message"
	}
	if e.Code < 0 {
		return fmt.Sprintf("%s did not finish: %s", e.Stage, msg)
	}
	return fmt.Sprintf("%s exited %d: %s", e.Stage, e.Code, msg)
}

// errorLine is the line of a stage's stderr that says why it failed: the last error line
// ("ctx-x: error: ..."; warnings come before it, a hint after it), else the last line that
// is not a hint, else the last line.
func errorLine(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], ": error: ") {
			return strings.TrimSpace(lines[i])
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if !strings.HasPrefix(lines[i], "hint:") {
			return strings.TrimSpace(lines[i])
		}
	}
	return strings.TrimSpace(lines[len(lines)-1])
}

// Run sends in through the pipeline and returns what it wrote. env holds the variables
// set for every stage on top of getenv (the process environment for a shell pipeline).
func (p *Pipeline) Run(ctx context.Context, in []byte, getenv func(string) string, env map[string]string) ([]byte, error) {
	return p.RunStages(ctx, in, getenv, env, nil)
}

// RunStages is Run, handing each (when not nil) every in-process stage's name, input and
// output as it finishes (a shell pipeline's stages are not seen). Neither is to be kept.
func (p *Pipeline) RunStages(ctx context.Context, in []byte, getenv func(string) string, env map[string]string, each func(stage string, in, out []byte)) ([]byte, error) {
	if p.stages == nil {
		return p.runShell(ctx, in, env)
	}
	lookup := StageEnv(getenv, env)
	data := in
	for _, s := range p.stages {
		if err := ctx.Err(); err != nil {
			return nil, &StageError{Stage: s.name, Code: -1, Stderr: stopped(err) + " before it started"}
		}
		var out, errs bytes.Buffer
		// A stage writes about what it read: room for it up front saves the copies of a
		// buffer grown by doubling.
		out.Grow(len(data) + len(data)/16 + 4096)
		if code := s.main(s.args, bytes.NewReader(data), &out, &errs, lookup); code != 0 && code != 1 {
			// 1 is a check that fired (ctx-count --fail-over): the document still went on.
			return nil, &StageError{Stage: s.name, Code: code, Stderr: errs.String()}
		}
		if each != nil {
			each(s.name, data, out.Bytes())
		}
		data = out.Bytes()
	}
	return data, nil
}

// stopped says why a pipeline was stopped: its time was up, or the replay was cancelled.
func stopped(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "out of time (--timeout)"
	}
	return err.Error()
}

func (p *Pipeline) runShell(ctx context.Context, in []byte, env map[string]string) ([]byte, error) {
	// bash can say which stage of a pipe failed (pipefail); a plain sh only knows the last.
	cmd := exec.CommandContext(ctx, "sh", "-c", p.Text)
	if bash, err := exec.LookPath("bash"); err == nil {
		cmd = exec.CommandContext(ctx, bash, "-o", "pipefail", "-c", p.Text)
	}
	ownGroup(cmd)
	// Should a program outlive the kill and hold the output open, stop waiting for it.
	cmd.WaitDelay = time.Second
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errs bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &out, &errs
	err := cmd.Run()
	if err == nil {
		return out.Bytes(), nil
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) && ctx.Err() == nil && exit.ExitCode() >= 0 {
		return nil, &StageError{Stage: "sh -c", Code: exit.ExitCode(), Stderr: errs.String()}
	}
	if ctx.Err() != nil {
		return nil, &StageError{Stage: "sh -c", Code: -1, Stderr: stopped(ctx.Err())}
	}
	return nil, &StageError{Stage: "sh -c", Code: -1, Stderr: err.Error()}
}
