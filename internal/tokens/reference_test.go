package tokens

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/dlclark/regexp2"
	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
	"github.com/tidwall/gjson"
)

// The reference is tiktoken-go with the offline loader: what this package used before
// it had its own counter, and what its counts must equal.

var (
	refLoader = sync.OnceFunc(func() { tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader()) })
	refO200k  = sync.OnceValues(func() (*tiktoken.Tiktoken, error) { refLoader(); return tiktoken.GetEncoding("o200k_base") })
	refCl100k = sync.OnceValues(func() (*tiktoken.Tiktoken, error) { refLoader(); return tiktoken.GetEncoding("cl100k_base") })
)

func reference(t testing.TB, name string) *tiktoken.Tiktoken {
	t.Helper()
	get := refO200k
	if name == "cl100k" {
		get = refCl100k
	}
	tk, err := get()
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func referenceCount(t testing.TB, name, text string) int {
	return len(reference(t, name).EncodeOrdinary(text))
}

func vocabFor(name string) *vocab {
	if name == "cl100k" {
		return cl100k
	}
	return o200k
}

// regexpPieces splits text the way tiktoken-go does: regexp2 over the runes of text.
func regexpPieces(t testing.TB, name, text string) []string {
	t.Helper()
	re := regexpFor(t, name)
	runes := []rune(text)
	var out []string
	m, err := re.FindStringMatch(text)
	for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
		out = append(out, string(runes[m.Index:m.Index+m.Length]))
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	reO200k  = sync.OnceValue(func() *regexp2.Regexp { return regexp2.MustCompile(o200kPattern, regexp2.None) })
	reCl100k = sync.OnceValue(func() *regexp2.Regexp { return regexp2.MustCompile(cl100kPattern, regexp2.None) })
)

func regexpFor(t testing.TB, name string) *regexp2.Regexp {
	if name == "cl100k" {
		return reCl100k()
	}
	return reO200k()
}

// ourPieces splits text with this package's pre-tokenizer.
func ourPieces(name, text string) []string {
	v := vocabFor(name)
	text = string([]rune(text)) // as countText does for invalid UTF-8
	p := newSplitter()
	var out []string
	for i := 0; i < len(text); {
		j := v.split(p, text, i)
		if j <= i || j > len(text) {
			panic(fmt.Sprintf("%s: next(%q, %d) = %d", name, text, i, j))
		}
		out = append(out, text[i:j])
		i = j
	}
	return out
}

// TestPatternsMatchReference: the patterns quoted in the pre-tokenizers are the ones
// tiktoken-go compiles, so the regexp comparisons below test against the real thing.
func TestPatternsMatchReference(t *testing.T) {
	// tiktoken-go keeps the pattern in an unexported field; its pieces show it.
	text := "Don't SHOUT'LL you'RE  42,000 naïve\r\n\t 中文/ok"
	for _, name := range []string{"o200k", "cl100k"} {
		ref := reference(t, name)
		var pieces []string
		for _, tok := range ref.EncodeOrdinary(text) {
			pieces = append(pieces, ref.Decode([]int{tok}))
		}
		joined := strings.Join(regexpPieces(t, name, text), "")
		if joined != text || strings.Join(pieces, "") != text {
			t.Fatalf("%s: pieces do not tile the text", name)
		}
	}
}

// checkText compares pieces and counts with the reference for both encodings and
// reports mismatches (at most a few per test). It returns the tokens compared.
func checkText(t *testing.T, what, text string, budget *int) int {
	t.Helper()
	total := 0
	for _, name := range []string{"o200k", "cl100k"} {
		want := referenceCount(t, name, text)
		got := countText(vocabFor(name), text, nil, nil)
		total += want
		if memo := checkMemo(name); got == want {
			// And through a memo that lives from text to text, as a counter's does.
			if got := countText(vocabFor(name), text, nil, memo); got != want {
				*budget--
				t.Errorf("%s %s: %d tokens through the memo, reference %d; text %q", what, name, got, want, clip(text))
			}
			continue
		}
		*budget--
		if *budget < 0 {
			t.FailNow()
		}
		ours, theirs := ourPieces(name, text), regexpPieces(t, name, text)
		i := 0
		for i < min(len(ours), len(theirs)) && ours[i] == theirs[i] {
			i++
		}
		detail := "the pieces agree, the merge differs"
		if i < len(ours) || i < len(theirs) {
			detail = fmt.Sprintf("first different piece %d: ours %q, regexp %q", i, at(ours, i), at(theirs, i))
		}
		t.Errorf("%s %s: %d tokens, reference %d; %s; text %q", what, name, got, want, detail, clip(text))
	}
	return total
}

// checkMemos are the memos checkText counts through, one per vocabulary, kept from one
// text to the next so that pieces are found in them and evicted from them.
var checkMemos = sync.OnceValue(func() map[string]*pieceMemo {
	return map[string]*pieceMemo{"o200k": new(pieceMemo), "cl100k": new(pieceMemo)}
})

func checkMemo(name string) *pieceMemo { return checkMemos()[name] }

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "<end>"
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:150] + "…" + s[len(s)-150:]
	}
	return s
}

// palette holds runes of every class the split patterns distinguish, and the edges
// between them: letters of each case class (Lu, Ll, Lt, Lm, Lo) in and beyond the
// BMP, marks of each kind, digits of each kind, every sort of space, \r and \n,
// apostrophes and contraction letters in both cases, punctuation and '/', symbols,
// emoji, format characters and U+FFFD.
var palette = []string{
	"a", "z", "A", "Z", "s", "S", "t", "T", "r", "R", "e", "E", "v", "V", "m", "M", "l", "L", "d", "D", "k",
	"'", "'", "'s", "'S", "'ll", "'LL", "'Re", "'ve", "'d", "'M", "'T",
	" ", " ", " ", "  ", "\t", "\n", "\r", "\r\n", "\n\n", "\v", "\f", "\u00a0", "\u0085", "\u2003", "\u3000", "\u2028",
	"0", "7", "42", "1234567", "٣", "०", "２", "²", "½", "Ⅻ", "𝟘",
	"!", ".", ",", "-", "_", "\"", "/", "//", "(", ")", "{", "}", "<|endoftext|>", "#", "$", "+", "=", "\\",
	"\u0301", "\u0308", "\u0903", "\u20dd", "\u05b0", "\U000E0100",
	"ǅ", "ʰ", "ー", "ß", "é", "É", "Σ", "σ", "ς", "ﬁ", "İ", "ı", "K",
	"中", "文", "字", "ア", "한", "ا", "ש", "क", "ि", "ไ", "Ж", "ж", "𝐀", "𝐚", "𠀀", "𐐀", "𐐨",
	"🙂", "👍", "🏽", "\u200d", "\ufeff", "\U000E0041", "€", "©", "\ufffd", "\x00", "\x7f",
	"\xff", "\xc3", "\xe4\xb8", "\xed\xa0\x80", "\xf0\x9f\x98", "\x80",
}

// paletteTexts are n deterministic random strings of palette entries.
func paletteTexts(n, maxLen int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]string, n)
	var b strings.Builder
	for i := range out {
		b.Reset()
		for range 1 + r.IntN(maxLen) {
			b.WriteString(palette[r.IntN(len(palette))])
		}
		out[i] = b.String()
	}
	return out
}

// handTexts are the kinds of text issue 7 names, written out.
func handTexts() []string {
	texts := []string{
		"", "a", " ", "\n", "hello world", "Hello, World!", "  leading and trailing  ",
		"The quick brown fox jumps over the lazy dog.\nIt's a dog's life; we'll see, they'd've known.",
		"IT'S WHAT THEY'LL DO, WE'RE SURE, YOU'VE SEEN, I'M DONE, HE'D GO, DON'T",
		"'s 't 're 've 'm 'll 'd 'S 'T 'RE 'VE 'M 'LL 'D 'x ''s",
		"CamelCaseIdentifier getHTTPResponseCode XMLHttpRequest snake_case_name SCREAMING_CASE",
		"func main() {\n\tfmt.Println(\"hi\")\n}\n",
		"def f(x):\r\n    return x ** 2  \r\n\r\n\r\n",
		`{"role":"user","content":"What's 2+2?","n":[1,22,333,4444,55555]}`,
		"$ ls -la /usr/local/bin\ntotal 48\ndrwxr-xr-x  2 root root 4096 Jan  1 00:00 .\n-rwxr-xr-x 1 root root 1234 go\n",
		"你好，世界！这是一个没有空格的中文句子，用来测试分词。日本語のテキストも混ぜます。한국어 문장도 있습니다.",
		"🙂👍🏽 emoji 👨‍👩‍👧‍👦 family 🇯🇵 flag",
		"Русский текст, Ελληνικά γράμματα, עברית, العربية, हिन्दी देवनागरी, ไทย",
		"naïve café résumé coöperate e\u0301 a\u0308\u0301 !\u0301 \u0301\u0301",
		"1234567890 3.14159 1e10 0x1F 1,000,000 ١٢٣٤٥ ０１２３ ²³ ⅠⅡⅢ",
		"tabs\t\tand\t \tspaces    \n    \n\n\n   \r\n\r\n  end   ",
		"\u00a0\u00a0nbsp\u3000ideographic\u3000\u3000space\u0085nel\u2028ls",
		"path/to/file.go:12:5: error\n/usr/bin/env //comment ///x !/\n/",
		"<|endoftext|><|fim_prefix|><|im_start|>system",
		"\xff\xfe invalid \xc3( utf8 \xed\xa0\x80 surrogate \xf0\x9f\x98 truncated \x80",
	}
	// Runs that a tokenizer with a quadratic merge chokes on, small enough for the
	// reference.
	for _, unit := range []string{"a", "ab", " ", "\n", "中", "文字", "0", "/", "=", "\u0301", "A", "aA", "𝐀"} {
		texts = append(texts, strings.Repeat(unit, 700))
	}
	texts = append(texts, base64Text(3000, 1), strings.Repeat("x ", 600)+strings.Repeat(" ", 50))
	return texts
}

func base64Text(n int, seed uint64) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	r := rand.New(rand.NewPCG(seed, 3))
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

// jsonStrings returns the distinct string values (and keys) of a JSON or JSONL document.
func jsonStrings(data []byte, seen map[string]bool) []string {
	var out []string
	var walk func(gjson.Result)
	walk = func(v gjson.Result) {
		switch {
		case v.Type == gjson.String:
			if !seen[v.Str] {
				seen[v.Str] = true
				out = append(out, v.Str)
			}
		case v.IsObject():
			v.ForEach(func(k, val gjson.Result) bool {
				if !seen[k.Str] {
					seen[k.Str] = true
					out = append(out, k.Str)
				}
				walk(val)
				return true
			})
		case v.IsArray():
			v.ForEach(func(_, val gjson.Result) bool { walk(val); return true })
		}
	}
	if gjson.ValidBytes(data) {
		walk(gjson.ParseBytes(data))
		return out
	}
	for line := range bytes.Lines(data) {
		walk(gjson.ParseBytes(line))
	}
	return out
}

func TestPretokenizeMatchesRegexp(t *testing.T) {
	texts := append(handTexts(), paletteTexts(3000, 40, 1)...)
	bad := 0
	for _, name := range []string{"o200k", "cl100k"} {
		for _, text := range texts {
			ours, theirs := ourPieces(name, text), regexpPieces(t, name, text)
			if !slices.Equal(ours, theirs) {
				t.Errorf("%s: %q\n ours   %q\n regexp %q", name, text, ours, theirs)
				if bad++; bad > 10 {
					t.FailNow()
				}
			}
		}
	}
}

// TestCountMatchesReferenceGenerated compares counts on text of every kind: written out,
// random strings over a palette of tricky runes, and every string of a generated
// session (prose, code, JSON, logs, shell output, diffs, CJK).
func TestCountMatchesReferenceGenerated(t *testing.T) {
	budget := 10
	inputs, tokens := 0, 0
	for _, text := range append(handTexts(), paletteTexts(3000, 60, 2)...) {
		tokens += checkText(t, "text", text, &budget)
		inputs++
	}
	seen := map[string]bool{}
	for _, format := range []string{"claude-code", "openai"} {
		var doc bytes.Buffer
		if err := testgen.Generate(&doc, testgen.Options{Format: format, Size: 400 << 10, Seed: 11}); err != nil {
			t.Fatal(err)
		}
		for _, s := range jsonStrings(doc.Bytes(), seen) {
			tokens += checkText(t, format, s, &budget)
			inputs++
		}
	}
	t.Logf("%d texts, %d tokens compared (both encodings)", inputs, tokens)
}

// TestCountMatchesReferenceSamples compares counts on every string of the samples in
// testdata/.
func TestCountMatchesReferenceSamples(t *testing.T) {
	budget := 10
	inputs, tokens := 0, 0
	seen := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "*.json*"))
	if len(files) == 0 {
		t.Fatal("no samples in testdata")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range jsonStrings(data, seen) {
			tokens += checkText(t, filepath.Base(f), s, &budget)
			inputs++
		}
	}
	t.Logf("%d files, %d distinct strings, %d tokens compared (both encodings)", len(files), inputs, tokens)
}

// corpusDir is ../shared/corpus beside the checkout (DESIGN §7).
var corpusDir = filepath.Join("..", "..", "..", "shared", "corpus")

func corpusFiles(t testing.TB) []string {
	if _, err := os.Stat(corpusDir); err != nil {
		t.Skipf("corpus not found at %s", corpusDir)
	}
	var files []string
	err := filepath.WalkDir(corpusDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if strings.HasSuffix(p, ".jsonl") || strings.HasSuffix(p, ".traj") || strings.HasSuffix(p, ".json") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestCountMatchesReferenceCorpus compares counts on every distinct string value of every
// corpus file. The reference is slow (about 2 MB/s), so -short and the quick loop check
// one string in 8 (most of this package's test time), CTXKIT_LONG=1 every one. (This
// package's tests cannot import invariant, which imports tokens: its IsLong is read here.)
func TestCountMatchesReferenceCorpus(t *testing.T) {
	quick := testing.Short() || os.Getenv("CTXKIT_LONG") != "1"
	files := corpusFiles(t)
	budget := 10
	inputs, tokens, size := 0, 0, 0
	seen := map[string]bool{}
	k := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range jsonStrings(data, seen) {
			if k++; quick && k%8 != 0 {
				continue
			}
			tokens += checkText(t, filepath.Base(f), s, &budget)
			inputs++
			size += len(s)
		}
	}
	t.Logf("%d files, %d distinct strings (%d bytes), %d tokens compared (both encodings)", len(files), inputs, size, tokens)
}

// FuzzCountMatchesReference: any input, valid UTF-8 or not, counts as the reference
// counts it, and splits as the reference's regexp splits it.
func FuzzCountMatchesReference(f *testing.F) {
	for _, s := range handTexts() {
		if len(s) <= 4096 {
			f.Add(s)
		}
	}
	for _, s := range paletteTexts(50, 30, 3) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 4096 {
			t.Skip("the reference is quadratic")
		}
		for _, name := range []string{"o200k", "cl100k"} {
			if ours, theirs := ourPieces(name, text), regexpPieces(t, name, text); !slices.Equal(ours, theirs) {
				t.Fatalf("%s: %q\n ours   %q\n regexp %q", name, text, ours, theirs)
			}
			want := referenceCount(t, name, text)
			if got := countText(vocabFor(name), text, nil, nil); got != want {
				t.Fatalf("%s: %q: %d tokens, reference %d", name, text, got, want)
			}
			if got := countText(vocabFor(name), text, nil, checkMemo(name)); got != want {
				t.Fatalf("%s: %q: %d tokens through the memo, reference %d", name, text, got, want)
			}
		}
	})
}

// TestMergeMatchesReference compares the merge alone on long single pieces, where the
// heap merge (not the small loop) runs, including runs of one repeated token.
func TestMergeMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	var pieces []string
	for _, unit := range []string{"a", "ab", "abc", "中", "中文", "ー", "\u0301", "é", "🙂"} {
		for _, n := range []int{1, 2, 3, 5, 8, 11, 16, 17, 33, 100, 257} {
			pieces = append(pieces, strings.Repeat(unit, n))
		}
	}
	// Text in which some boundaries between characters hold and others do not: words
	// of common Chinese characters (some are tokens of two or more characters), Latin
	// letters, accents.
	for range 200 {
		var b strings.Builder
		for range 1 + r.IntN(80) {
			b.WriteString(chineseWords[r.IntN(len(chineseWords))])
		}
		pieces = append(pieces, b.String())
	}
	letters := []rune("abcdefghijklmnopqrstuvwxyz中文字日本語éàü")
	for range 300 {
		n := 1 + r.IntN(200)
		b := make([]rune, n)
		for i := range b {
			b[i] = letters[r.IntN(len(letters))]
		}
		pieces = append(pieces, string(b))
	}
	for _, name := range []string{"o200k", "cl100k"} {
		tab := vocabFor(name).table()
		ref := reference(t, name)
		for _, p := range pieces {
			// The reference encodes a whole text; a single piece of letters is one
			// regexp match, so its count is the merge's.
			if len(regexpPieces(t, name, p)) != 1 {
				continue
			}
			want := len(ref.EncodeOrdinary(p))
			got := 1
			if tab.rank(p) < 0 {
				got = tab.merge(p)
			}
			if got != want {
				t.Errorf("%s: merge(%q) = %d, reference %d", name, clip(p), got, want)
			}
			if len(p) > 1 && tab.rank(p) < 0 {
				sc := new(mergeScratch)
				if h := tab.mergeQueue(p, sc); h != want {
					t.Errorf("%s: mergeQueue(%q) = %d, reference %d", name, clip(p), h, want)
				}
				if len(p) <= smallPieceBytes {
					if s := tab.mergeSmall(p, nil, 0); s != want {
						t.Errorf("%s: mergeSmall(%q) = %d, reference %d", name, p, s, want)
					}
				}
				if l := tab.mergeLong(p, sc); l != want {
					t.Errorf("%s: mergeLong(%q) = %d, reference %d", name, clip(p), l, want)
				}
			}
		}
	}
}

// chineseWords are common characters and words, many of them single tokens.
var chineseWords = strings.Fields("的 一 是 不 了 人 我 在 有 他 这 中 大 来 上 国 个 到 说 们 为 子 和 你 地 出 道 也 时 年 " +
	"中国 我们 他们 一个 没有 什么 时候 自己 这个 因为 所以 但是 现在 已经 可以 知道 问题 工作 发展 经济 社会 " +
	"人民 政府 国家 世界 研究 技术 公司 市场 服务 管理 系统 数据 信息 网络 用户 功能 文件 代码 测试 错误 " +
	"中华人民共和国 人工智能 机器学习 自然语言处理 。 ， 、 ！")

// TestVocabulary: every token of the table is found at its rank, the table agrees with
// the reference's decoding, and strings that are not tokens are not found.
func TestVocabulary(t *testing.T) {
	for _, name := range []string{"o200k", "cl100k"} {
		tab := vocabFor(name).table()
		ref := reference(t, name)
		want := map[string]int{"o200k": 199998, "cl100k": 100256}[name]
		if tab.size() != want {
			t.Errorf("%s: %d tokens, want %d", name, tab.size(), want)
		}
		for r := range tab.size() {
			tok := tab.blob[tab.off[r]:tab.off[r+1]]
			if got := tab.rank(tok); got != int32(r) {
				t.Fatalf("%s: rank(token %d %q) = %d", name, r, tok, got)
			}
			if r%97 == 0 {
				if dec := ref.Decode([]int{r}); dec != tok {
					t.Fatalf("%s: token %d is %q, reference %q", name, r, tok, dec)
				}
			}
		}
		for _, s := range []string{"", strings.Repeat("x", 129), "qzxqzxqzx", "\xff\xfe\xfd"} {
			if r := tab.rank(s); r >= 0 {
				t.Errorf("%s: rank(%q) = %d, want none", name, s, r)
			}
		}
		if !utf8.ValidString(tab.blob[tab.off[0]:tab.off[1]]) {
			t.Errorf("%s: token 0 is not text", name)
		}
	}
}

// simpleMerge is tiktoken-go's bytePairMerge, counting only: the quadratic loop that
// merge must agree with.
func simpleMerge(t *table, piece string) int {
	type part struct{ start, rank int }
	const none = math.MaxInt
	parts := make([]part, len(piece)+1)
	for i := range parts {
		parts[i] = part{i, none}
	}
	rankAt := func(i, skip int) int {
		if i+skip+2 < len(parts) {
			if r := t.rank(piece[parts[i].start:parts[i+skip+2].start]); r >= 0 {
				return int(r)
			}
		}
		return none
	}
	for i := 0; i < len(parts)-2; i++ {
		parts[i].rank = rankAt(i, 0)
	}
	for len(parts) > 1 {
		best := -1
		for i := 0; i < len(parts)-1; i++ {
			if parts[i].rank < none && (best < 0 || parts[i].rank < parts[best].rank) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		parts[best].rank = rankAt(best, 1)
		if best > 0 {
			parts[best-1].rank = rankAt(best-1, 1)
		}
		parts = append(parts[:best+1], parts[best+2:]...)
	}
	return len(parts) - 1
}

// TestMergeAlgorithmsAgree compares the merges with tiktoken's loop on byte strings
// made to merge in every way: concatenations of random tokens of the whole vocabulary
// (so that long tokens and tokens across character boundaries form), runs of one token,
// and CJK words. No pre-tokenizer is involved, so strings mix anything.
func TestMergeAlgorithmsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for _, name := range []string{"o200k", "cl100k"} {
		tab := vocabFor(name).table()
		token := func() string {
			k := r.IntN(tab.size())
			return tab.blob[tab.off[k]:tab.off[k+1]]
		}
		sc := new(mergeScratch)
		var inputs []string
		for range 1500 {
			var b strings.Builder
			switch r.IntN(4) {
			case 0:
				for range 1 + r.IntN(60) {
					b.WriteString(token())
				}
			case 1:
				tok := token()
				for range 1 + r.IntN(100) {
					b.WriteString(tok)
				}
			case 2:
				for range 1 + r.IntN(60) {
					b.WriteString(chineseWords[r.IntN(len(chineseWords))])
				}
			default:
				// Tokens cut at random: parts that only merge across the cuts.
				for range 1 + r.IntN(40) {
					tok := token()
					b.WriteString(tok[r.IntN(len(tok)):])
				}
			}
			inputs = append(inputs, b.String())
		}
		for _, p := range inputs {
			if len(p) < 2 {
				continue
			}
			want := simpleMerge(tab, p)
			if got := tab.mergeQueue(p, sc); got != want {
				t.Errorf("%s: mergeQueue(%q) = %d, want %d", name, clip(p), got, want)
			}
			if got := tab.mergeLong(p, sc); got != want {
				t.Errorf("%s: mergeLong(%q) = %d, want %d", name, clip(p), got, want)
			}
			checkMerges(t, name, tab, sc, p, want)
			if len(p) <= smallPieceBytes {
				if got := tab.mergeSmall(p, nil, 0); got != want {
					t.Errorf("%s: mergeSmall(%q) = %d, want %d", name, p, got, want)
				}
			}
		}
	}
}

// syntheticTable is a vocabulary over the letters a-d: the single letters, then random
// strings of two to six letters in random order of rank. Unlike the real vocabularies
// (in which no merge of a single token or of two tokens was found to make a pair of
// lower rank than its own), it often ranks a token below one of its parts, so merging
// is far from monotone in rank.
func syntheticTable(t *testing.T, seed uint64) *table {
	r := rand.New(rand.NewPCG(seed, 1))
	seen := map[string]bool{"a": true, "b": true, "c": true, "d": true}
	words := []string{"a", "b", "c", "d"}
	var rest []string
	for len(rest) < 300 {
		b := make([]byte, 2+r.IntN(5))
		for i := range b {
			b[i] = "abcd"[r.IntN(4)]
		}
		if !seen[string(b)] {
			seen[string(b)] = true
			rest = append(rest, string(b))
		}
	}
	var src strings.Builder
	for i, w := range append(words, rest...) {
		fmt.Fprintf(&src, "%s %d\n", base64.StdEncoding.EncodeToString([]byte(w)), i)
	}
	tab, err := parseTiktoken([]byte(src.String()))
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// TestMergeAlgorithmsAgreeSynthetic runs the merges on vocabularies made to merge out of
// rank order, where mergeQueue must interrupt the rank it drains and mergeLong must
// weigh boundary pairs against merges of lower rank, and on strings long enough for
// mergeLong to retire old segments.
func TestMergeAlgorithmsAgreeSynthetic(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	sc := new(mergeScratch)
	for seed := range uint64(6) {
		tab := syntheticTable(t, seed)
		for k := range 400 {
			n := 1 + r.IntN(120)
			if k%50 == 0 {
				n = 3000 + r.IntN(2000)
			}
			// Some pieces repeat a short unit, for mergeChunks' copies of a chunk.
			unit := 1 << 30
			if k%4 == 1 {
				unit = 1 + r.IntN(8)
			}
			b := make([]byte, n)
			for i := range b {
				if i >= unit {
					b[i] = b[i-unit]
				} else {
					b[i] = "abcd"[r.IntN(4)]
				}
			}
			p := string(b)
			want := simpleMerge(tab, p)
			if got := tab.mergeQueue(p, sc); got != want {
				t.Fatalf("vocabulary %d: mergeQueue(%q) = %d, want %d", seed, clip(p), got, want)
			}
			if got := tab.mergeLong(p, sc); got != want {
				t.Fatalf("vocabulary %d: mergeLong(%q) = %d, want %d", seed, clip(p), got, want)
			}
			checkMerges(t, fmt.Sprintf("vocabulary %d", seed), tab, sc, p, want)
			if len(p) <= smallPieceBytes {
				if got := tab.mergeSmall(p, nil, 0); got != want {
					t.Fatalf("vocabulary %d: mergeSmall(%q) = %d, want %d", seed, p, got, want)
				}
			}
		}
	}
}

// checkMerges checks the merges built on mergeQueue and mergeRadix against want, the
// count of piece: mergeRadix alone, and mergeChunks and mergeApart, which cut a piece
// and check their cuts.
func checkMerges(t *testing.T, what string, tab *table, sc *mergeScratch, p string, want int) {
	t.Helper()
	if got := tab.mergeRadix(p, sc, nil, 0); got != want {
		t.Fatalf("%s: mergeRadix(%q) = %d, want %d", what, clip(p), got, want)
	}
	if got := tab.mergeChunks(p, sc); got != want {
		t.Fatalf("%s: mergeChunks(%q) = %d, want %d", what, clip(p), got, want)
	}
	if got := tab.mergeApart(p, sc); got != want {
		t.Fatalf("%s: mergeApart(%q) = %d, want %d", what, clip(p), got, want)
	}
}

// TestMergeShapes: long pieces of the shapes that defeat the pre-tokenizers (a run of
// spaces or of one character, letters, CJK, text that repeats a unit) count the same
// through merge, which cuts them, as through mergeQueue, which merges them whole and is
// held to tiktoken's loop by the tests above. The lengths fall on no chunk boundary.
func TestMergeShapes(t *testing.T) {
	var pieces []string
	for _, n := range []int{33, 511, 512, 513, 1500, 4099, 70001} {
		for _, unit := range []string{" ", "\t", "=", "a", "ab", "abc", "中", "-=", "xyzzy"} {
			pieces = append(pieces, strings.Repeat(unit, n/len(unit)+1)[:n/len(unit)*len(unit)])
		}
		pieces = append(pieces, strings.Repeat(" ", n)+"x", "x"+strings.Repeat(" ", n))
	}
	for _, kind := range []string{"cjk", "letters"} {
		for _, n := range []int{5000, 100 << 10} {
			pieces = append(pieces, pathological(kind, n))
		}
	}
	// Random text of a few letters (hexadecimal without its digits) and of
	// punctuation, in which few or no pairs of bytes are apart and fixed cuts often
	// fail.
	r := rand.New(rand.NewPCG(11, 11))
	for _, alphabet := range []string{"abcdef", "!@#$%^&*()-=+[]{};:,.<>?|~`", "aab", "AaBb"} {
		for _, n := range []int{3000, 60000} {
			b := make([]byte, n)
			for i := range b {
				b[i] = alphabet[r.IntN(len(alphabet))]
			}
			pieces = append(pieces, string(b))
		}
	}
	// Letters with runs and copies inside: repeated words, then random letters.
	var b strings.Builder
	for b.Len() < 50000 {
		if r.IntN(3) == 0 {
			b.WriteString(strings.Repeat("abcdefghij"[r.IntN(10):][:1], 1+r.IntN(2000)))
		} else {
			b.WriteString(pathological("letters", 1+r.IntN(3000)))
		}
	}
	pieces = append(pieces, b.String())
	for _, name := range []string{"o200k", "cl100k"} {
		tab := vocabFor(name).table()
		sc := new(mergeScratch)
		for _, p := range pieces {
			want := tab.mergeQueue(p, sc)
			if got := tab.merge(p); got != want {
				t.Errorf("%s: merge(%q) = %d, mergeQueue %d", name, clip(p), got, want)
			}
			if got := tab.mergeChunks(p, sc); got != want {
				t.Errorf("%s: mergeChunks(%q) = %d, mergeQueue %d", name, clip(p), got, want)
			}
		}
	}
}

// TestMergeChunksCopiesThatFail: in a vocabulary where "aabb" repeated merges into
// blocks of "abba" that straddle every cut between chunks, the cut between two equal
// chunks fails, and mergeChunks must find it so. Every pair of bytes is a token, so the
// cuts stay where they are.
func TestMergeChunksCopiesThatFail(t *testing.T) {
	var src strings.Builder
	for i, w := range []string{"a", "b", "ab", "ba", "abba", "aa", "bb"} {
		fmt.Fprintf(&src, "%s %d\n", base64.StdEncoding.EncodeToString([]byte(w)), i)
	}
	tab, err := parseTiktoken([]byte(src.String()))
	if err != nil {
		t.Fatal(err)
	}
	sc := new(mergeScratch)
	for _, n := range []int{chunkBytes, 3 * chunkBytes, 5*chunkBytes + 8} {
		p := strings.Repeat("aabb", n/4)
		want := simpleMerge(tab, p)
		checkMerges(t, fmt.Sprintf("%d bytes", len(p)), tab, sc, p, want)
	}
}

// FuzzMergeLong: a piece made long by repeating the fuzzer's bytes (runs, periodic text,
// copies of chunks that hold or fail) counts the same through merge, which cuts it, as
// through mergeQueue, which merges it whole and is held to tiktoken's loop above.
func FuzzMergeLong(f *testing.F) {
	f.Add(" ", uint16(5000))
	f.Add("aabb", uint16(900))
	f.Add("qxabcdefghij", uint16(300))
	f.Add("中文字", uint16(400))
	f.Add(")}]);", uint16(2000))
	f.Fuzz(func(t *testing.T, unit string, times uint16) {
		if unit == "" {
			return
		}
		p := strings.Repeat(unit, 1+int(times)%(1<<16/len(unit)+1))
		for _, name := range []string{"o200k", "cl100k"} {
			tab := vocabFor(name).table()
			if got, want := tab.merge(p), tab.mergeQueue(p, new(mergeScratch)); got != want {
				t.Fatalf("%s: merge(%q × %d) = %d, mergeQueue %d", name, clip(unit), len(p)/len(unit), got, want)
			}
		}
	})
}

// TestMergeApartCuts holds mergeApart's cuts to the whole merge on random text of the
// alphabets that reach it as one long piece (letters, hexadecimal, base64, letters with
// runs of spaces, a few letters), at every length up to a few hundred bytes and some
// longer: each place mergeApart cuts at must be a boundary that merging the piece whole
// (mergeQueue) leaves, and the counts must agree. A cut rule that lets a token cross
// (a two-byte token at a place no longer token spans, say) fails here.
func TestMergeApartCuts(t *testing.T) {
	alphabets := []string{
		"abcdefghijklmnopqrstuvwxyz",
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
		"0123456789abcdef",
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
		"abcdefghij      ",
		"etaoinshrdlu",
		"aab",
		"qxzjkv",
	}
	r := rand.New(rand.NewPCG(21, 21))
	var lengths []int
	for n := 1; n <= 300; n++ {
		lengths = append(lengths, n)
	}
	lengths = append(lengths, 511, 512, 513, 1000, 4099, 20000)
	for _, name := range []string{"o200k", "cl100k"} {
		tab := vocabFor(name).table()
		sc := new(mergeScratch)
		for _, alphabet := range alphabets {
			for _, n := range lengths {
				b := make([]byte, n)
				for i := range b {
					b[i] = alphabet[r.IntN(len(alphabet))]
				}
				p := string(b)
				want := tab.mergeQueue(p, sc)
				bound := make([]bool, n+1)
				for q := int32(0); int(q) < n; q = sc.next[q] {
					bound[q] = true
				}
				for i := 1; i < n; i++ {
					if tab.apartAt(p, i) && !bound[i] {
						t.Fatalf("%s: mergeApart cuts %q at %d, where a token crosses", name, clip(p), i)
					}
				}
				if got := tab.mergeApart(p, sc); got != want {
					t.Fatalf("%s: mergeApart(%q) = %d, mergeQueue %d", name, clip(p), got, want)
				}
			}
		}
	}
}
