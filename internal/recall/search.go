package recall

import (
	"bytes"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/offload"
	"github.com/ctxkit/ctxkit/internal/recall/index"
	"github.com/ctxkit/ctxkit/internal/store"
)

// query is what a search looks for.
type query struct {
	text    string
	terms   map[uint64]int // ranked words and identifiers
	phrases []string       // each must appear as it is, case folded
	re      *regexp.Regexp // --regexp, matched line by line (as grep does)
	reText  *regexp.Regexp // the same in multi-line mode: a quick test of a whole text
}

// parseQuery reads a query: its "quoted" parts are phrases (the whole query with
// --phrase), everything is ranked by its terms.
func parseQuery(q string, phrase, re bool) (query, error) {
	out := query{text: q}
	if re {
		x, err := regexp.Compile(q)
		if err != nil {
			return out, cli.Usagef("--regexp: %v", err)
		}
		out.re = x
		// (whatever matches a line matches the text with ^ and $ at each line)
		out.reText = regexp.MustCompile("(?m)" + q)
		return out, nil
	}
	out.terms = index.QueryTerms(q)
	if phrase {
		out.phrases = []string{q}
	} else {
		rest := q
		for {
			i := strings.IndexByte(rest, '"')
			if i < 0 {
				break
			}
			j := strings.IndexByte(rest[i+1:], '"')
			if j < 0 {
				break
			}
			if p := strings.TrimSpace(rest[i+1 : i+1+j]); p != "" {
				out.phrases = append(out.phrases, p)
			}
			rest = rest[i+1+j+1:]
		}
	}
	if len(out.terms) == 0 && len(out.phrases) == 0 {
		return out, cli.Usagef("the query %q has no word to find (letters or digits); --regexp finds other characters", human.Clip(q, 80))
	}
	return out, nil
}

// must are the terms a phrase's text has, which every hit must have too.
func (q query) must() []uint64 {
	var out []uint64
	seen := map[uint64]bool{}
	for _, p := range q.phrases {
		index.Terms([]byte(p), func(h uint64) {
			if !seen[h] {
				seen[h] = true
				out = append(out, h)
			}
		})
	}
	return out
}

// hasPhrases reports whether text holds every phrase, case folded.
func (q query) hasPhrases(lower []byte) bool {
	for _, p := range q.phrases {
		if !bytes.Contains(lower, []byte(strings.ToLower(p))) {
			return false
		}
	}
	return true
}

// excerpt is one matching line of a hit.
type excerpt struct {
	Line int    `json:"line"`
	Text string `json:"text"`
}

// result is one hit as shown.
type result struct {
	item
	Score    float64   `json:"score"`
	Excerpts []excerpt `json:"excerpts"`
	// Matches is how many lines of the item match.
	Matches int `json:"matching_lines"`
}

// report is a search's output.
type report struct {
	Query     string   `json:"query"`
	Mode      string   `json:"mode"`
	Store     string   `json:"store"`
	Searched  int      `json:"searched"`
	Matched   int      `json:"matched"`
	Results   []result `json:"results"`
	NotShown  int      `json:"not_shown"`
	MaxTokens int      `json:"max_tokens"`
}

func (r *recaller) search(text string) error {
	q, err := parseQuery(text, r.f.Phrase, r.f.Regexp)
	if err != nil {
		return err
	}
	s, err := r.open("")
	if err != nil {
		return err
	}
	defer s.Close()
	rep := report{Query: text, Mode: "words", Store: s.Dir(), MaxTokens: r.f.MaxTokens.Int()}
	// (--limit items at most are read: then --max-tokens shows as many as fit)
	want := r.f.Limit
	var hits []found
	if q.re == nil && len(q.terms) == 0 {
		// phrases without a word ("->"): no term to look up, every text is read
		var alt []string
		for _, p := range q.phrases {
			alt = append(alt, regexp.QuoteMeta(p))
		}
		q.re = regexp.MustCompile("(?i)" + strings.Join(alt, "|"))
		q.reText = regexp.MustCompile("(?im)" + strings.Join(alt, "|"))
		hits, rep.Searched, rep.Matched, err = scan(s, q, want)
		rep.Mode = "phrase"
	} else if q.re != nil {
		rep.Mode = "regexp"
		hits, rep.Searched, rep.Matched, err = scan(s, q, want)
	} else {
		if len(q.phrases) > 0 {
			rep.Mode = "phrase"
		}
		hits, rep.Searched, rep.Matched, err = r.ranked(s, q, want)
	}
	if err != nil {
		return err
	}
	for _, f := range hits {
		res := result{item: f.item, Score: f.score}
		res.Excerpts, res.Matches = excerpts(f.data, q, r.f.Excerpts)
		rep.Results = append(rep.Results, res)
	}
	return r.render(rep)
}

// found is one hit with its text.
type found struct {
	item
	score float64
	data  []byte
}

func itemOf(s *store.Store, h string, e store.Entry, data []byte) item {
	it := item{Ref: shortRef(h), Hash: h, Path: s.Path(h), Bytes: len(data), Lines: offload.LineCount(string(data)),
		Tokens: e.Tokens, Tokenizer: e.Tokenizer, Tool: e.Tool, ToolCallID: e.ToolCallID, Input: e.Input, Source: e.Source, Time: e.Time, Raw: e.Raw, Indexed: true}
	return it
}

// ranked searches the index.
func (r *recaller) ranked(s *store.Store, q query, want int) ([]found, int, int, error) {
	ix, err := index.Open(s, true)
	if err != nil {
		return nil, 0, 0, cli.RuntimeError(fmt.Errorf("index: %w", err))
	}
	defer ix.Close()
	var out []found
	// Of the best by BM25, those that hold the whole query as it is come first: a line
	// remembered word for word names its item, where its words alone may be in many (the
	// same file read twice, its line numbers apart).
	whole := []byte(strings.ToLower(strings.Join(strings.Fields(q.text), " ")))
	exact := 0
	_, matched, err := ix.Search(q.terms, q.must(), max(want, verbatimAmong), func(h index.Hit) (bool, error) {
		data, err := s.Get(h.Hash)
		if err != nil {
			return false, nil // gone or damaged since it was indexed
		}
		var lower []byte
		if len(q.phrases) > 0 || len(q.terms) > 1 {
			lower = bytes.ToLower(data)
		}
		if len(q.phrases) > 0 && !q.hasPhrases(lower) {
			return false, nil
		}
		f := found{item: itemOf(s, h.Hash, h.Entry, data), score: h.Score, data: data}
		if len(q.terms) > 1 && holdsWords(lower, whole) {
			out = slices.Insert(out, exact, f)
			exact++
		} else {
			out = append(out, f)
		}
		return true, nil
	})
	if err != nil {
		return nil, 0, 0, cli.RuntimeError(fmt.Errorf("index: %w", err))
	}
	if len(out) > want {
		out = out[:want]
	}
	return out, ix.Docs(), matched, nil
}

// verbatimAmong is how many of the best items by BM25 are read to find those that hold
// the query word for word.
const verbatimAmong = 32

// holdsWords reports whether text holds words (lowercased, its runs of white space made
// one space) as they are, white space between them matched by any run of it.
func holdsWords(text, words []byte) bool {
	if len(words) == 0 {
		return false
	}
	first := words
	if i := bytes.IndexByte(words, ' '); i >= 0 {
		first = words[:i]
	}
	for at := 0; ; {
		i := bytes.Index(text[at:], first)
		if i < 0 {
			return false
		}
		if matchSpaced(text[at+i:], words) {
			return true
		}
		at += i + 1
	}
}

// matchSpaced reports whether text starts with words, a space in words matching any run
// of white space.
func matchSpaced(text, words []byte) bool {
	j := 0
	for i := 0; i < len(words); i++ {
		if words[i] == ' ' {
			if j >= len(text) || !isSpaceByte(text[j]) {
				return false
			}
			for j < len(text) && isSpaceByte(text[j]) {
				j++
			}
			continue
		}
		if j >= len(text) || text[j] != words[i] {
			return false
		}
		j++
	}
	return true
}

func isSpaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// scan reads every stored item for a regular expression, on every core, and ranks those
// that match by how many lines do, the newest first among equals.
func scan(s *store.Store, q query, want int) ([]found, int, int, error) {
	entries, _, err := s.Index()
	if err != nil {
		return nil, 0, 0, cli.RuntimeError(err)
	}
	var todo []store.Entry
	seen := map[string]bool{}
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if store.ValidHash(e.Hash) && !seen[e.Hash] {
			seen[e.Hash] = true
			todo = append(todo, e)
		}
	}
	type hit struct {
		e     store.Entry
		lines int
		order int
	}
	var mu sync.Mutex
	var hits []hit
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				data, err := s.Get(todo[i].Hash)
				if err != nil || !q.reText.Match(data) {
					continue
				}
				n := 0
				for _, l := range bytes.Split(data, []byte("\n")) {
					if q.re.Match(l) {
						n++
					}
				}
				if n == 0 {
					continue // (a match across lines, which no line has)
				}
				mu.Lock()
				hits = append(hits, hit{todo[i], n, i})
				mu.Unlock()
			}
		}()
	}
	for i := range todo {
		next <- i
	}
	close(next)
	wg.Wait()
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].lines != hits[j].lines {
			return hits[i].lines > hits[j].lines
		}
		return hits[i].order < hits[j].order
	})
	var out []found
	for _, h := range hits {
		if len(out) == want {
			break
		}
		data, err := s.Get(h.e.Hash)
		if err != nil {
			continue
		}
		out = append(out, found{item: itemOf(s, h.e.Hash, h.e, data), score: float64(h.lines), data: data})
	}
	return out, len(todo), len(hits), nil
}

// excerpts are the lines of data that match best, in their order: by the query's
// distinct terms each has (a phrase or the expression counts for all of them), the
// earliest first among equals. It returns them and how many lines match at all.
func excerpts(data []byte, q query, n int) ([]excerpt, int) {
	lines := splitLines(string(data))
	type cand struct {
		line, score int
	}
	var cands []cand
	lowPhrases := make([]string, len(q.phrases))
	for i, p := range q.phrases {
		lowPhrases[i] = strings.ToLower(p)
	}
	for i, l := range lines {
		if len(l) > 100000 {
			l = l[:100000]
		}
		score := 0
		switch {
		case q.re != nil:
			if q.re.MatchString(l) {
				score = 1
			}
		default:
			got := map[uint64]bool{}
			index.Terms([]byte(l), func(h uint64) {
				if q.terms[h] > 0 {
					got[h] = true
				}
			})
			score = len(got)
			if len(lowPhrases) > 0 {
				low := strings.ToLower(l)
				for _, p := range lowPhrases {
					if strings.Contains(low, p) {
						score += len(q.terms) + 1
					}
				}
			}
		}
		if score > 0 {
			cands = append(cands, cand{i, score})
		}
	}
	matches := len(cands)
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].score > cands[j].score })
	if len(cands) > n {
		cands = cands[:n]
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].line < cands[j].line })
	var out []excerpt
	for _, c := range cands {
		out = append(out, excerpt{Line: c.line + 1, Text: around(lines[c.line], q, excerptWidth)})
	}
	return out, matches
}

// excerptWidth is how much of a matching line is shown.
const excerptWidth = 160

// around is the part of a long line around its first match, at most width bytes.
func around(line string, q query, width int) string {
	line = strings.TrimRight(line, "\r")
	if len(line) <= width {
		return line
	}
	at := -1
	switch {
	case q.re != nil:
		if loc := q.re.FindStringIndex(line); loc != nil {
			at = loc[0]
		}
	case len(q.phrases) > 0:
		at = strings.Index(strings.ToLower(line), strings.ToLower(q.phrases[0]))
	default:
		// the first word of the line that is a query term
		pos := 0
		for _, w := range strings.FieldsFunc(line, func(r rune) bool {
			return !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= 0x80)
		}) {
			i := strings.Index(line[pos:], w)
			if i < 0 {
				break
			}
			hit := false
			index.Terms([]byte(w), func(h uint64) { hit = hit || q.terms[h] > 0 })
			if hit {
				at = pos + i
				break
			}
			pos += i + len(w)
		}
	}
	start := max(0, at-width/4)
	end := min(len(line), start+width)
	for start > 0 && start < len(line) && !isRuneStart(line[start]) {
		start--
	}
	for end < len(line) && !isRuneStart(line[end]) {
		end--
	}
	s := line[start:end]
	if start > 0 {
		s = "…" + s
	}
	if end < len(line) {
		s += "…"
	}
	return s
}

func isRuneStart(c byte) bool { return c&0xC0 != 0x80 }

// render writes the report: JSON for programs, text to paste into a context, each within
// --max-tokens, the best items first, as many as fit with as many excerpts as fit.
func (r *recaller) render(rep report) error {
	budget := r.f.MaxTokens.Int()
	if len(rep.Results) == 0 {
		if r.f.JSON {
			rep.Results = []result{}
			if err := r.writeJSON(rep); err != nil {
				return err
			}
			return notFound()
		}
		msg := fmt.Sprintf("ctx-recall: nothing stored matches %s (%s %s searched in %s)\n", quoteQuery(rep.Query), human.Thousands(rep.Searched), plural(rep.Searched, "item"), human.Safe(rep.Store))
		if err := r.write([]byte(msg)); err != nil {
			return err
		}
		return notFound()
	}
	if r.f.JSON {
		var kept []result
		used := r.count.Count(`{"query":"","mode":"","store":"","searched":0,"matched":0,"results":[],"not_shown":0,"max_tokens":0}`) + r.count.Count(rep.Query+rep.Store)
		for _, res := range rep.Results {
			fitted, n := r.fitResult(res, budget-used, func(res result) string { b, _ := jsonLine(res); return b })
			if n < 0 {
				break
			}
			used += n
			kept = append(kept, fitted)
		}
		rep.NotShown = rep.Matched - len(kept)
		rep.Results = kept
		if rep.Results == nil {
			rep.Results = []result{}
		}
		return r.writeJSON(rep)
	}
	head := fmt.Sprintf("%s %s of %s stored match %s", human.Thousands(rep.Matched), plural(rep.Matched, "item"), human.Thousands(rep.Searched), quoteQuery(rep.Query))
	foot := "read one: ctx-recall --read REF [--lines A-B]; its shape: ctx-recall --outline REF\n"
	used := r.count.Count(head+"; the best 10:\n") + r.count.Count(foot)
	var blocks []string
	for i, res := range rep.Results {
		fitted, n := r.fitResult(res, budget-used, func(res result) string { return block(i+1, res) })
		if n < 0 {
			break
		}
		used += n
		blocks = append(blocks, block(i+1, fitted))
	}
	var b strings.Builder
	switch {
	case len(blocks) < rep.Matched:
		fmt.Fprintf(&b, "%s; the best %d (--limit, --max-tokens for more):\n", head, len(blocks))
	default:
		b.WriteString(head + ":\n")
	}
	for _, bl := range blocks {
		b.WriteString(bl)
	}
	b.WriteString(foot)
	return r.write([]byte(b.String()))
}

// fitResult is res with as many of its excerpts as fit in room tokens as show renders it,
// and what it costs; -1 when not even its first line fits.
func (r *recaller) fitResult(res result, room int, show func(result) string) (result, int) {
	all := res.Excerpts
	for k := len(all); k >= 0; k-- {
		res.Excerpts = all[:k]
		if n := r.count.Count(show(res)); n <= room {
			return res, n
		}
	}
	return res, -1
}

// block is one result as text: its reference and what it is, then its excerpts.
func block(i int, res result) string {
	var b strings.Builder
	what := res.Tool
	switch {
	case what == "ctx-summarize":
		what = "conversation before a summary"
	case what == "":
		what = "tool result"
	case res.Input:
		what += " input"
	}
	fmt.Fprintf(&b, "%d. %s  %s", i, res.Ref, human.SafeLabel(what, 40))
	if res.ToolCallID != "" {
		fmt.Fprintf(&b, " %s", human.SafeLabel(res.ToolCallID, 48))
	}
	if res.Tokens > 0 {
		fmt.Fprintf(&b, ", ~%s tokens", human.Thousands(res.Tokens))
	} else {
		fmt.Fprintf(&b, ", %s bytes", human.Thousands(res.Bytes))
	}
	fmt.Fprintf(&b, ", %s %s", human.Thousands(res.Lines), plural(res.Lines, "line"))
	if !res.Time.IsZero() {
		fmt.Fprintf(&b, ", stored %s", res.Time.UTC().Format(time.DateTime))
	}
	if res.Matches > len(res.Excerpts) {
		fmt.Fprintf(&b, "; %s matching %s", human.Thousands(res.Matches), plural(res.Matches, "line"))
	}
	b.WriteString("\n")
	for _, e := range res.Excerpts {
		fmt.Fprintf(&b, "   L%d: %s\n", e.Line, clipLine(e.Text, excerptWidth+8))
	}
	return b.String()
}

func quoteQuery(q string) string { return "“" + human.SafeLabel(q, 80) + "”" }

func jsonLine(v any) (string, error) {
	var b bytes.Buffer
	enc := jsonEncoder(&b)
	err := enc.Encode(v)
	return b.String(), err
}
