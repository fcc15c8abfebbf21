// End-to-end tests: the testscript scripts in testdata/script run the real binaries,
// pipelines included, and assert their stdout, stderr and exit status.
package ctxkit_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/tidwall/gjson"

	_ "github.com/ctxkit/ctxkit/internal/apicount" // --tokenizer api, as every binary has it
	"github.com/ctxkit/ctxkit/internal/budget"
	"github.com/ctxkit/ctxkit/internal/convert"
	"github.com/ctxkit/ctxkit/internal/count"
	"github.com/ctxkit/ctxkit/internal/persist"
	"github.com/ctxkit/ctxkit/internal/proxy"
	"github.com/ctxkit/ctxkit/internal/recall"
	"github.com/ctxkit/ctxkit/internal/repair"
	"github.com/ctxkit/ctxkit/internal/replay"
	"github.com/ctxkit/ctxkit/internal/sessions"
	"github.com/ctxkit/ctxkit/internal/snip"
	"github.com/ctxkit/ctxkit/internal/summarize"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/trim"
)

// mains are the binaries' entry points, run in-process by testscript and by the tests.
var mains = map[string]func(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int{
	"ctx-count": count.Main, "ctx-persist": persist.Main, "ctx-budget": budget.Main, "ctx-snip": snip.Main,
	"ctx-summarize": summarize.Main, "ctx-trim": trim.Main, "ctx-repair": repair.Main, "ctx-convert": convert.Main,
	"ctx-replay": replay.Main,
	"ctx-proxy":  proxy.Main,
	"ctx-recall": recall.Main,
}

func TestMain(m *testing.M) {
	commands := map[string]func(){}
	for name, main := range mains {
		commands[name] = func() { os.Exit(main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)) }
	}
	testscript.Main(m, commands)
}

// -update: rewrite, in each script, the files that cmp stdout or cmp stderr compares with
// (testscript.Params.UpdateScripts), from what the tools print now.
var update = flag.Bool("update", false, "rewrite the scripts' expected files from the current output")

func TestScripts(t *testing.T) {
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: false,
		UpdateScripts:       *update,
		Setup: func(env *testscript.Env) error {
			// Scripts reach the shipped samples through $SAMPLES and the shared corpus
			// through $CORPUS (which may not exist: scripts that use it check first).
			env.Setenv("SAMPLES", filepath.Join(root, "testdata"))
			env.Setenv("CORPUS", filepath.Join(root, "..", "shared", "corpus"))
			env.Setenv("NO_COLOR", "")
			// Token counts shared between runs go to the script's own directory, never
			// to the home directory testscript names.
			env.Setenv("CTX_CACHE_DIR", filepath.Join(env.WorkDir, ".cache"))
			// State (the circuit breaker's) likewise.
			env.Setenv("XDG_STATE_HOME", filepath.Join(env.WorkDir, ".state"))
			return nil
		},
		// [root]: files can be given to another user (chown), to test ownership checks.
		Condition: func(cond string) (bool, error) {
			if cond == "root" {
				return os.Geteuid() == 0, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"gendoc":     cmdGendoc,
			"plantcache": cmdPlantCache,
			"fakemodel":  cmdFakeModel,
			"age":        cmdAge,
			"status":     cmdStatus,
			"cmpjson":    cmdCmpJSON,
			"mangle":     cmdMangle,
			"replace":    cmdReplace,
			"recorder":   cmdRecorder,
			"freeport":   cmdFreePort,
			"proxypost":  cmdProxyPost,
		},
	})
}

// gendoc FORMAT SIZE FILE writes a generated document (internal/testgen) of about SIZE
// bytes to FILE.
func cmdGendoc(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: gendoc FORMAT SIZE FILE")
	}
	size, err := strconv.Atoi(args[1])
	ts.Check(err)
	var b bytes.Buffer
	ts.Check(testgen.Generate(&b, testgen.Options{Format: args[0], Size: size, Seed: 1}))
	ts.Check(os.WriteFile(ts.MkAbs(args[2]), b.Bytes(), 0o644))
}

// plantcache DIR DOC plants what an attacker without the user's secret can write in the
// count cache folder DIR: a record with a valid CRC and a count of 1 for every string of
// DOC of 1 KB or more, keyed by its SHA-256, in the layout of every cache version so far
// (v1: key, count, CRC; v2: marker, key, count, CRC).
func cmdPlantCache(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: plantcache DIR DOC")
	}
	doc, err := os.ReadFile(ts.MkAbs(args[1]))
	ts.Check(err)
	var v1, v2 []byte
	var walk func(gjson.Result)
	walk = func(r gjson.Result) {
		switch {
		case r.Type == gjson.String && len(r.Str) >= 1<<10:
			sum := sha256.Sum256([]byte(r.Str))
			v1 = append(v1, sum[:16]...)
			v1 = binary.LittleEndian.AppendUint32(v1, 1)
			v1 = binary.LittleEndian.AppendUint32(v1, crc32.ChecksumIEEE(v1[len(v1)-20:]))
			v2 = append(v2, 0xC7, 'c', 'k', 2)
			v2 = append(v2, sum[:16]...)
			v2 = binary.LittleEndian.AppendUint32(v2, 1)
			v2 = binary.LittleEndian.AppendUint32(v2, crc32.ChecksumIEEE(v2[len(v2)-24:]))
		case r.IsObject() || r.IsArray():
			r.ForEach(func(_, v gjson.Result) bool { walk(v); return true })
		}
	}
	for _, line := range bytes.Split(doc, []byte("\n")) { // JSON or JSONL
		if len(bytes.TrimSpace(line)) > 0 {
			walk(gjson.ParseBytes(line))
		}
	}
	if len(v1) == 0 {
		walk(gjson.ParseBytes(doc))
	}
	dir := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(dir, 0o700))
	for _, tok := range []string{"o200k", "cl100k"} {
		ts.Check(os.WriteFile(filepath.Join(dir, "counts-"+tok+"-v1.bin"), v1, 0o600))
		ts.Check(os.WriteFile(filepath.Join(dir, "counts-"+tok+"-v2.bin"), v2, 0o600))
	}
}

// status N PROG [ARGS...] runs PROG as exec does, keeping its stdout and stderr for the
// checks that follow, and fails unless it exits with status N: exec and ! exec tell success
// from failure only, and ctxkit's statuses say which failure (2 usage, 3 input, 4 runtime).
func cmdStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: status N PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = exit.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

// cmpjson [-ignore KEY,...] A B compares two files of JSON values, one a line: the same
// values in the same order, but for the top-level members named (the report of a replay
// names its pipeline, which two ways of running the same stages spell differently).
func cmdCmpJSON(ts *testscript.TestScript, neg bool, args []string) {
	var ignore []string
	if len(args) > 0 && args[0] == "-ignore" {
		if len(args) < 2 {
			ts.Fatalf("usage: cmpjson [-ignore KEY,...] A B")
		}
		ignore, args = strings.Split(args[1], ","), args[2:]
	}
	if len(args) != 2 {
		ts.Fatalf("usage: cmpjson [-ignore KEY,...] A B")
	}
	read := func(name string) []any {
		data := ts.ReadFile(name)
		var out []any
		for i, line := range strings.Split(strings.TrimSpace(data), "\n") {
			var v any
			if err := json.Unmarshal([]byte(line), &v); err != nil {
				ts.Fatalf("%s: line %d: %v", name, i+1, err)
			}
			if m, ok := v.(map[string]any); ok {
				for _, k := range ignore {
					delete(m, k)
				}
			}
			out = append(out, v)
		}
		return out
	}
	a, b := read(args[0]), read(args[1])
	same := len(a) == len(b)
	for i := 0; same && i < len(a); i++ {
		same = reflect.DeepEqual(a[i], b[i])
	}
	if same == neg {
		if neg {
			ts.Fatalf("%s and %s are the same", args[0], args[1])
		}
		ts.Fatalf("%s and %s differ", args[0], args[1])
	}
}

// mangle VAR DIR sets VAR to the folder name Claude Code keeps DIR's sessions under.
func cmdMangle(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: mangle VAR DIR")
	}
	ts.Setenv(args[0], sessions.Mangle(args[1]))
}

// replace FILE OLD NEW replaces every OLD in FILE with NEW: a path only known when the
// script runs ($WORK) put into a sample.
func cmdReplace(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: replace FILE OLD NEW")
	}
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), bytes.ReplaceAll(b, []byte(args[1]), []byte(args[2])), 0o644))
}

// age FILE... sets the modification time of each FILE (not following links) an hour back,
// as if a run killed an hour ago had left it.
func cmdAge(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: age FILE...")
	}
	old := time.Now().Add(-time.Hour)
	for _, f := range args {
		ts.Check(os.Chtimes(ts.MkAbs(f), old, old))
	}
}

// fakemodel KIND VAR starts a model server on 127.0.0.1 for the rest of the script and
// sets VAR to its base URL. KIND:
//
//	echo-key       answers every request 401 with an error body that echoes the key the
//	               request carried (x-api-key or a bearer token), as OpenAI's does
//	redirect       answers 307 to the same path on another host (localhost, another port)
//	redirect-port  answers 307 to the same path on 127.0.0.1 at another port
//
// The redirect target answers a valid reply, and creates the file leaked in the script's
// directory if any request reaches it with a key.
func cmdFakeModel(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: fakemodel echo-key|redirect|redirect-port VAR")
	}
	serve := func(h http.HandlerFunc) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		ts.Check(err)
		srv := &http.Server{Handler: h, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
		go srv.Serve(l)
		ts.Defer(func() { srv.Close() })
		return "http://" + l.Addr().String()
	}
	keyOf := func(r *http.Request) string {
		if k := r.Header.Get("x-api-key"); k != "" {
			return k
		}
		return strings.TrimPrefix(r.Header.Get("authorization"), "Bearer ")
	}
	var url string
	switch args[0] {
	case "echo-key":
		url = serve(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("content-type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, keyOf(r))
		})
	case "redirect", "redirect-port":
		leaked := ts.MkAbs("leaked")
		target := serve(func(w http.ResponseWriter, r *http.Request) {
			if keyOf(r) != "" {
				os.WriteFile(leaked, []byte(keyOf(r)), 0o600)
			}
			w.Header().Set("content-type", "application/json")
			fmt.Fprint(w, `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"<summary>leaked</summary>"},"finish_reason":"stop"}],"type":"message","content":[{"type":"text","text":"<summary>leaked</summary>"}],"stop_reason":"end_turn"}`)
		})
		if args[0] == "redirect" {
			target = strings.Replace(target, "127.0.0.1", "localhost", 1)
		}
		url = serve(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target+r.URL.Path, http.StatusTemporaryRedirect)
		})
	default:
		ts.Fatalf("fakemodel: unknown kind %q", args[0])
	}
	ts.Setenv(args[1], url)
}

// TestScriptsPinStderr holds every script to asserting the whole stderr of each run that
// succeeds, so that a new warning (or a stray line) fails a test instead of going unseen.
// A run is an exec that must succeed (no ! or ? before it), a binary named without exec,
// a status 0, or a wait (the stderr of the runs started with &). Before the next run or the end of
// the script, one of these must pin its stderr:
//
//	! stderr .               nothing on stderr
//	stderr -count=N '\n'     exactly N lines, with at least one stderr match of their text
//	cmp stderr FILE          (or cmpenv) the whole text
func TestScriptsPinStderr(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "script", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	unpinned := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range unpinnedRuns(string(data)) {
			t.Errorf("%s:%d: %s: stderr not pinned (add ! stderr ., or stderr -count=N '\\n' and a match of each line)", file, r.line, r.text)
			unpinned++
		}
	}
	if unpinned > 0 {
		t.Logf("%d successful runs do not pin their stderr", unpinned)
	}
}

// TestUnpinnedRuns: the checker itself, on a script with every case.
func TestUnpinnedRuns(t *testing.T) {
	script := `exec ctx-count a.json
stdout x
exec ctx-count b.json
stderr warning
exec ctx-count c.json
stderr -count=1 '\n'
exec ctx-count d.json
! stderr .
exec ctx-count e.json
stderr -count=1 '\n' # counted
stderr '^ctx-count: warning: e$'
exec ctx-count f.json &
exec ctx-count g.json &
wait
! exec ctx-count h.json
stderr 'error'
[root] exec chown 1 i.json
[root] ! stderr .
exec ctx-count j.json
cmp stderr want.txt
ctx-count k.json
status 0 ctx-count m.json
status 4 ctx-count n.json
-- a.json --
exec ctx-count l.json
`
	var got []int
	for _, r := range unpinnedRuns(script) {
		got = append(got, r.line)
	}
	if want := []int{1, 3, 5, 14, 21, 22}; !slices.Equal(got, want) {
		t.Errorf("unpinned runs on lines %v, want %v", got, want)
	}
}

type scriptRun struct {
	line          int
	text          string
	pinned        bool // by ! stderr ., cmp stderr, or a line count
	counted, seen bool // a line count; a positive stderr match
}

// unpinnedRuns returns the runs of a script (the part before its first file) whose stderr
// no assertion pins.
func unpinnedRuns(script string) []scriptRun {
	var runs []scriptRun
	open := -1 // index in runs of the run whose stderr the next assertions see
	for i, line := range strings.Split(script, "\n") {
		if strings.HasPrefix(line, "-- ") && strings.HasSuffix(strings.TrimSpace(line), " --") {
			break
		}
		words := scriptWords(line)
		for len(words) > 0 && strings.HasPrefix(words[0], "[") {
			words = words[1:] // a condition
		}
		neg := len(words) > 0 && (words[0] == "!" || words[0] == "?")
		if neg {
			words = words[1:]
		}
		if len(words) == 0 {
			continue
		}
		_, binary := mains[words[0]]
		switch {
		case words[0] == "exec" || binary:
			if words[len(words)-1] == "&" {
				continue // its stderr is the wait's
			}
			open = -1
			if !neg {
				runs = append(runs, scriptRun{line: i + 1, text: strings.TrimSpace(line)})
				open = len(runs) - 1
			}
		case words[0] == "status":
			// status N runs a binary too; only status 0 must succeed.
			open = -1
			if !neg && len(words) > 1 && words[1] == "0" {
				runs = append(runs, scriptRun{line: i + 1, text: strings.TrimSpace(line)})
				open = len(runs) - 1
			}
		case words[0] == "wait":
			runs = append(runs, scriptRun{line: i + 1, text: strings.TrimSpace(line)})
			open = len(runs) - 1
		case open < 0:
		case words[0] == "stderr" && neg && len(words) == 2 && words[1] == ".":
			runs[open].pinned = true
		case (words[0] == "cmp" || words[0] == "cmpenv") && len(words) == 3 && words[1] == "stderr":
			runs[open].pinned = true
		case words[0] == "stderr" && !neg && len(words) == 3 && strings.HasPrefix(words[1], "-count=") && words[2] == `\n`:
			runs[open].counted = true
		case words[0] == "stderr" && !neg:
			runs[open].seen = true
		}
	}
	var out []scriptRun
	for _, r := range runs {
		if !r.pinned && !(r.counted && r.seen) {
			out = append(out, r)
		}
	}
	return out
}

// scriptWords splits a script line into words as testscript does (single quotes group,
// ” is a quote, # outside quotes starts a comment), without expanding variables.
func scriptWords(line string) []string {
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quoted && c == '\'' && i+1 < len(line) && line[i+1] == '\'':
			w.WriteByte(c)
			i++
		case c == '\'':
			quoted, inWord = !quoted, true
		case quoted:
			w.WriteByte(c)
		case c == ' ' || c == '\t' || c == '\r' || c == '#':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
			if c == '#' {
				return words
			}
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// recorder VAR FILE starts a stand-in provider on loopback, its URL in $VAR: it appends
// every request's path and body to FILE, one line each, and answers with a short message.
func cmdRecorder(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: recorder VAR FILE")
	}
	file := ts.MkAbs(args[1])
	var mu sync.Mutex
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintf(f, "%s %s %s\n", r.Method, r.URL.RequestURI(), body)
			f.Close()
		}
		mu.Unlock()
		w.Header().Set("content-type", "application/json")
		fmt.Fprint(w, `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"done"}],"stop_reason":"end_turn"}`)
	})}
	go srv.Serve(l)
	ts.Defer(func() { srv.Close() })
	ts.Setenv(args[0], "http://"+l.Addr().String())
}

// freeport VAR puts a free loopback port in $VAR, for a server the script starts.
func cmdFreePort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: freeport VAR")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	ts.Setenv(args[0], strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	l.Close()
}

// proxypost URL FILE posts FILE to URL with a planted API key, waiting up to 10 seconds
// for a server the script started in the background to listen; the response body goes to
// stdout.
func cmdProxyPost(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: proxypost URL FILE")
	}
	body, err := os.ReadFile(ts.MkAbs(args[1]))
	ts.Check(err)
	var resp *http.Response
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		req, err := http.NewRequest(http.MethodPost, args[0], bytes.NewReader(body))
		ts.Check(err)
		req.Header.Set("x-api-key", "sk-ant-planted-key-42")
		req.Header.Set("content-type", "application/json")
		if resp, err = http.DefaultClient.Do(req); err == nil {
			break
		} else if time.Now().After(end) {
			ts.Fatalf("%s: %v", args[0], err)
		}
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	ts.Check(err)
	fmt.Fprintf(ts.Stdout(), "%d %s\n", resp.StatusCode, out)
}
