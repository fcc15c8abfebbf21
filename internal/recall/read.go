package recall

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/offload"
	"github.com/ctxkit/ctxkit/internal/safefile"
	"github.com/ctxkit/ctxkit/internal/store"
)

// item is one stored item as --meta describes it.
type item struct {
	Ref        string    `json:"ref"`
	Hash       string    `json:"hash"`
	Path       string    `json:"path"`
	Kind       string    `json:"kind,omitempty"`
	Bytes      int       `json:"bytes"`
	Lines      int       `json:"lines"`
	Tokens     int       `json:"tokens,omitempty"`
	Tokenizer  string    `json:"tokenizer,omitempty"`
	Tool       string    `json:"tool,omitempty"`
	ToolCallID string    `json:"tool_call_id,omitempty"`
	Input      bool      `json:"input,omitempty"`
	Source     string    `json:"source,omitempty"`
	Time       time.Time `json:"time,omitzero"`
	Raw        string    `json:"raw,omitempty"`
	// Encoding names the item whose original JSON this file is, when it is one.
	EncodingOf string `json:"encoding_of,omitempty"`
	Indexed    bool   `json:"indexed"`
	// Packed: the text is in one of the store's packs, with no file of its own at Path
	// (ctx-recall reads it; a file tool does not).
	Packed bool `json:"packed,omitempty"`
	// SourceLine is the line of Source that holds the result (the last that names the
	// tool call id as a result's), when Source is still there and names it.
	SourceLine int `json:"source_line,omitempty"`
}

// describeItem gathers what is known of the stored file h.
func describeItem(s *store.Store, h string, data []byte) (item, error) {
	it := item{Ref: shortRef(h), Hash: h, Path: s.Path(h), Bytes: len(data), Lines: offload.LineCount(string(data))}
	it.Packed = !s.HasFile(h, len(data))
	e, ok, err := entryOf(s, h)
	if err != nil {
		return it, cli.RuntimeError(err)
	}
	if ok {
		it.Indexed = true
		it.Tokens, it.Tokenizer, it.Tool, it.ToolCallID, it.Input, it.Source, it.Time = e.Tokens, e.Tokenizer, e.Tool, e.ToolCallID, e.Input, e.Source, e.Time
		if e.Hash == h {
			it.Raw = e.Raw
		} else {
			it.EncodingOf = e.Hash
		}
	}
	return it, nil
}

// fetch opens the store ref names and reads the item ref names in it, whose hash is h;
// the caller closes the store.
func (r *recaller) fetch(ref string) (s *store.Store, h string, data []byte, err error) {
	if s, err = r.open(ref); err != nil {
		return nil, "", nil, err
	}
	if h, err = resolve(s, ref); err == nil {
		data, err = get(s, h)
	}
	if err != nil {
		s.Close()
		return nil, "", nil, err
	}
	return s, h, data, nil
}

func (r *recaller) meta(ref string) error {
	s, h, data, err := r.fetch(ref)
	if err != nil {
		return err
	}
	defer s.Close()
	it, err := describeItem(s, h, data)
	if err != nil {
		return err
	}
	it.Kind = outlineOf(string(data)).Kind
	if it.Source != "" && it.ToolCallID != "" {
		it.SourceLine = lineOfResult(it.Source, it.ToolCallID)
	}
	if r.f.JSON {
		return r.writeJSON(it)
	}
	var b bytes.Buffer
	row := func(k, v string) { fmt.Fprintf(&b, "%-13s %s\n", k+":", v) }
	row("ref", it.Ref)
	if it.Packed {
		row("file", "none of its own: it is in one of the store's packs (read it with ctx-recall --read "+it.Ref+")")
	} else {
		row("file", human.Safe(offload.ShellQuote(it.Path)))
	}
	row("size", fmt.Sprintf("%s bytes, %s %s", human.Thousands(it.Bytes), human.Thousands(it.Lines), plural(it.Lines, "line")))
	row("kind", kindName(it.Kind))
	if !it.Indexed {
		row("stored", "(no line in the store's index)")
	} else {
		if it.Tokens > 0 {
			t := "~" + human.Thousands(it.Tokens)
			if it.Tokenizer != "" {
				t += " (" + human.Safe(it.Tokenizer) + ")"
			}
			row("tokens", t)
		}
		what := "tool result"
		switch {
		case it.Input:
			what = "tool call input"
		case it.Tool == "ctx-summarize":
			what = "conversation before a summary"
		}
		if it.EncodingOf != "" {
			what = "original JSON of " + shortRef(it.EncodingOf)
		}
		row("what", what)
		if it.Tool != "" && it.Tool != "ctx-summarize" {
			row("tool", human.Safe(it.Tool))
		}
		if it.ToolCallID != "" {
			row("tool call id", human.Safe(it.ToolCallID))
		}
		if it.Source != "" {
			from := human.Safe(it.Source)
			if it.SourceLine > 0 {
				from += fmt.Sprintf(", line %s (the result's message)", human.Thousands(it.SourceLine))
			}
			row("from", from)
		}
		if !it.Time.IsZero() {
			row("stored", it.Time.UTC().Format("2006-01-02 15:04:05 UTC"))
		}
		if it.Raw != "" {
			row("original", "JSON encoding kept as "+shortRef(it.Raw))
		}
	}
	fmt.Fprintf(&b, "outline: ctx-recall --outline %s; read: ctx-recall --read %s\n", it.Ref, it.Ref)
	return r.write(b.Bytes())
}

// lineOfResult finds the message a stored result came from in the session it was read
// from: the line of the last mention of the call id as a result's (tool_use_id,
// tool_call_id, call_id: the output follows the call), 0 when the file is not there (stdin,
// moved, another user's) or does not name it. Read only for --meta, a line at a time.
func lineOfResult(source, callID string) int {
	f, err := safefile.Open(source)
	if err != nil {
		return 0
	}
	defer f.Close()
	key := regexp.MustCompile(`"(?:tool_use_id|tool_call_id|call_id)"\s*:\s*` + regexp.QuoteMeta(strconv.Quote(callID)))
	r := bufio.NewReaderSize(f, 1<<16)
	found, n := 0, 0
	id := []byte(callID)
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// a long line: read it whole
			rest, rerr := r.ReadBytes('\n')
			line, err = append(append([]byte(nil), line...), rest...), rerr
		}
		if len(line) > 0 {
			n++
			if bytes.Contains(line, id) && key.Match(line) {
				found = n
			}
		}
		if err != nil {
			return found
		}
	}
}

func (r *recaller) writeJSON(v any) error {
	var b bytes.Buffer
	enc := jsonEncoder(&b)
	if r.ctx.StdoutTTY {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return cli.RuntimeError(err)
	}
	return r.write(b.Bytes())
}

func (r *recaller) outline(ref string) error {
	s, h, data, err := r.fetch(ref)
	if err != nil {
		return err
	}
	defer s.Close()
	sh := outlineOf(string(data))
	if r.f.JSON {
		return r.writeJSON(struct {
			Ref  string `json:"ref"`
			Hash string `json:"hash"`
			shape
		}{shortRef(h), h, sh})
	}
	return r.write(r.renderOutline(shortRef(h), data, sh, r.f.MaxTokens.Int()))
}

func jsonEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}

// lineRange reads --lines: "A-B", "A-", "-B" or "N", 1-based and inclusive.
func lineRange(spec string, n int) (from, to int, err error) {
	bad := cli.Usagef("--lines %q: give A-B, A-, -B or N (line numbers from 1)", spec)
	a, b, isRange := strings.Cut(strings.TrimSpace(spec), "-")
	num := func(s string, def int) (int, bool) {
		if s = strings.TrimSpace(s); s == "" {
			return def, true
		}
		v, err := strconv.Atoi(s)
		return v, err == nil && v >= 1
	}
	var ok1, ok2 bool
	if from, ok1 = num(a, 1); !isRange {
		to, ok2 = from, a != ""
	} else {
		to, ok2 = num(b, max(n, 1))
	}
	if !ok1 || !ok2 || from > to {
		return 0, 0, bad
	}
	return from, min(to, n), nil
}

// part is lines from to to (1-based, inclusive) of data, with their line breaks: the
// bytes as stored.
func part(data []byte, from, to int) []byte {
	line, start := 1, -1
	if from <= 1 {
		start = 0
	}
	for i, c := range data {
		if c != '\n' {
			continue
		}
		if line == to {
			return data[max(start, 0) : i+1]
		}
		line++
		if line == from {
			start = i + 1
		}
	}
	if start < 0 {
		return nil
	}
	return data[start:]
}

func (r *recaller) read(ref string) error {
	s, h, data, err := r.fetch(ref)
	if err != nil {
		return err
	}
	defer s.Close()
	lines := offload.LineCount(string(data))
	from, to := 1, lines
	switch {
	case r.f.Lines != "":
		if from, to, err = lineRange(r.f.Lines, lines); err != nil {
			return err
		}
		if from > lines {
			return cli.Usagef("--lines %q: %s has %d %s", r.f.Lines, shortRef(h), lines, plural(lines, "line"))
		}
	case r.f.Section != "":
		sh := outlineOf(string(data))
		e, ok := section(sh, r.f.Section)
		if !ok {
			e := cli.Usagef("--section %q: no such part in %s (%s)", r.f.Section, shortRef(h), kindName(sh.Kind))
			if list := names(sh, 8); list != "" {
				return cli.WithHint(e, "its parts: "+list)
			}
			return cli.WithHint(e, "ctx-recall --outline "+shortRef(h)+" shows what it holds; --lines A-B takes any part")
		}
		from, to = e.Line, e.End
	}
	out := data
	if from != 1 || to != lines {
		out = part(data, from, to)
	}
	if r.ctx.Given("max-tokens") {
		out = r.fit(out, r.f.MaxTokens.Int(), from)
	}
	if r.ctx.StdoutTTY && r.f.Output == "" {
		// on a terminal, each line numbered (as --lines counts them: no line of the text
		// can pass for one of ctx-recall's) and escaped; piped or to -o, the bytes as stored
		var b bytes.Buffer
		for i, l := range splitLines(string(out)) {
			fmt.Fprintf(&b, "%6d  %s\n", from+i, human.Safe(strings.TrimRight(l, "\r")))
		}
		out = b.Bytes()
	}
	return r.write(out)
}

// fit keeps the first whole lines of out that fit in maxTokens, and says where the rest
// starts.
func (r *recaller) fit(out []byte, maxTokens, first int) []byte {
	if r.count.Count(string(out)) <= maxTokens {
		return out
	}
	lines := splitLines(string(out))
	lo, hi := 0, len(lines)
	for lo < hi { // the most lines that fit
		m := (lo + hi + 1) / 2
		if r.count.Count(strings.Join(lines[:m], "\n")+"\n") <= maxTokens-30 {
			lo = m
		} else {
			hi = m - 1
		}
	}
	kept := strings.Join(lines[:lo], "\n")
	if lo > 0 {
		kept += "\n"
	}
	return []byte(kept + fmt.Sprintf("[ctx-recall: %d more lines not shown (--max-tokens %d); the rest: --lines %d-]\n", len(lines)-lo, maxTokens, first+lo))
}
