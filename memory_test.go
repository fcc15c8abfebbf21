package ctxkit_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/testgen"
)

// TestMemory holds every filter's peak memory to a ceiling relative to its input (issue 21),
// on generated documents of memSize bytes: a JSON document costs no more read from a pipe
// than named as a file, and ctx-convert on a JSONL transcript stays near the input's size.
//
// Each run is a child process (this test binary again, TestMemoryChild), so that the figure
// is the run's alone. The figure is the heap the Go runtime mapped (MemStats.HeapSys, which
// never shrinks: the peak) at the end of the run, as a share of the input. It is not timed
// and depends on no sampling, so it is the same from run to run within a few percent (the
// collector's pacing); the ceilings leave room for that. It is what /usr/bin/time's peak
// RSS measures less the binary and the stacks (scripts/bench.sh reports that one).
// The child also reports how much its peak RSS (VmHWM) grew during the run: what the
// collector's memory limit lowers is that, as it hands freed pages back, while HeapSys
// counts pages handed back too. jsonCeiling holds every tool to it.
func TestMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: generating and reading 20 MB documents")
	}
	// Long only: the ceilings are shares of the input, which a smaller input would not hold
	// (the runtime's own heap weighs more on it); what the streamed runs write is held to
	// the whole runs' in every package's TestStreamedMatchesWhole in the quick loop too.
	invariant.Long(t)
	dir := t.TempDir()
	inputs := map[string]string{}
	for _, format := range []string{"anthropic", "openai", "responses", "claude-code", "codex"} {
		ext := ".json"
		if format == "claude-code" || format == "codex" {
			ext = ".jsonl"
		}
		inputs[format] = filepath.Join(dir, format+ext)
		f, err := os.Create(inputs[format])
		if err != nil {
			t.Fatal(err)
		}
		err = testgen.Generate(f, testgen.Options{Format: format, Size: memSize, Seed: 1, Images: true})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	peak := func(t *testing.T, tool, input string, stdin bool, args ...string) (heap, rss float64) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestMemoryChild$")
		mode := "file"
		if stdin {
			mode = "stdin"
		}
		cmd.Env = append(os.Environ(), "CTXKIT_MEMORY_CHILD="+strings.Join(append([]string{tool, mode, input}, args...), "\t"),
			"CTX_CACHE_DIR=off", "CTX_STORE="+filepath.Join(dir, "store"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s (%s): %v\n%s", tool, filepath.Base(input), mode, err, out)
		}
		var size float64
		for _, line := range strings.Split(string(out), "\n") {
			if rest, ok := strings.CutPrefix(line, "memory: "); ok {
				if _, err := fmt.Sscanf(rest, "%g %g %g", &heap, &size, &rss); err != nil {
					t.Fatalf("child said %q: %v", line, err)
				}
			}
		}
		if size == 0 {
			t.Fatalf("%s %s (%s): the child reported nothing:\n%s", tool, filepath.Base(input), mode, out)
		}
		return heap / size, rss / size
	}

	// JSON: from a pipe as from a file. The old reading from a pipe grew a buffer by
	// doubling.
	// Every tool reads through the same code (internal/cli), so every tool runs on one
	// format and one on the others. The collector's pacing moves a figure by 0.2-0.4× (on
	// a loaded machine 0.6×) from run to run at this size: each is the least of three
	// runs, and stdin may be 0.8× above the file, where the old reading was 1.4-2.2× above.
	tools := map[string][]string{
		"anthropic": {"ctx-count", "ctx-persist", "ctx-budget", "ctx-snip", "ctx-summarize", "ctx-trim", "ctx-repair", "ctx-convert"},
		"openai":    {"ctx-persist"},
		"responses": {"ctx-convert"},
	}
	// least is the least of three runs' heap and of their peak RSS.
	least := func(t *testing.T, tool, input string, stdin bool, args ...string) (heap, rss float64) {
		heap, rss = peak(t, tool, input, stdin, args...)
		for range 2 {
			h, r := peak(t, tool, input, stdin, args...)
			heap, rss = min(heap, h), min(rss, r)
		}
		return heap, rss
	}
	for _, format := range []string{"anthropic", "openai", "responses"} {
		for _, tool := range tools[format] {
			t.Run(tool+"/"+format, func(t *testing.T) {
				var args []string
				if tool == "ctx-convert" {
					args = []string{"--to", "openai"}
					if format == "openai" {
						args[1] = "anthropic"
					}
				}
				file, fileRSS := least(t, tool, inputs[format], false, args...)
				pipe, pipeRSS := least(t, tool, inputs[format], true, args...)
				t.Logf("peak heap / input: file %.2f, stdin %.2f; peak RSS grown / input: file %.2f, stdin %.2f", file, pipe, fileRSS, pipeRSS)
				if pipe > file+0.8 {
					t.Errorf("read from a pipe, the peak heap is %.2f× the input; from the file, %.2f×", pipe, file)
				}
				if limit, ok := jsonCeiling[tool]; ok && fileRSS > 0 && max(fileRSS, pipeRSS) > limit {
					t.Errorf("the peak RSS grew by %.2f× the input from the file, %.2f× from a pipe; the ceiling is %.2f×", fileRSS, pipeRSS, limit)
				}
			})
		}
	}

	// ctx-convert on a JSONL transcript reads it in two passes and holds its output, about
	// half the input, not the input: the least of three runs from the file and from a pipe
	// stays under convertJSONLCeiling.
	for _, format := range []string{"claude-code", "codex"} {
		t.Run("ctx-convert/"+format, func(t *testing.T) {
			file, fileRSS := least(t, "ctx-convert", inputs[format], false)
			pipe, pipeRSS := least(t, "ctx-convert", inputs[format], true)
			t.Logf("peak heap / input: file %.2f, stdin %.2f; peak RSS grown / input: file %.2f, stdin %.2f", file, pipe, fileRSS, pipeRSS)
			if fileRSS > 0 && max(fileRSS, pipeRSS) > convertJSONLCeiling {
				t.Errorf("the peak RSS grew by %.2f× the input from the file, %.2f× from a pipe; the ceiling is %.2f×", fileRSS, pipeRSS, convertJSONLCeiling)
			}
		})
	}
}

// convertJSONLCeiling is the most ctx-convert's peak RSS may grow by during a run on a JSONL
// transcript, as a share of the input. On 100 MB it is about 0.8× (scripts/bench.sh's
// figure, binary included; issue 21 asks for 1.2×); on TestMemory's 20 MB the stretch read,
// the spool's megabyte and the runtime's own weigh more: 0.95-1.16×, where reading the
// transcript whole took 1.79-1.90×. (Its peak heap, HeapSys, moves in steps of several
// megabytes at this size, 1.2-1.8× from run to run, 2.6× before: too coarse to hold it to.)
const convertJSONLCeiling = 1.4

// jsonCeiling is the most a tool's peak RSS may grow by during a run on a JSON document,
// as a share of the input, from a file or a pipe (issue 21). On 100 MB the four stay under
// 2× (scripts/bench.sh: about 1.85×, from 2.1-2.6× before cli.tuneGC's memory limit); on
// TestMemory's 20 MB the runtime's own megabytes and the limit's slack weigh more, so the
// ceilings sit between the figures with the limit (count 1.8, persist 2.4-2.7, budget 2.6,
// snip 1.95, 1.75-1.8 since it lets its input go before indexing what it stored) and
// without it (2.2, 2.9-3.4, 2.9, 2.5-2.9), each the least of three runs.
// ctx-convert, whose output goes to a spool read back once the input is let go, grows by
// 1.75-1.85× (on 100 MB its peak is 1.75× the input, binary included), where holding
// input and output at once took 2.3-2.7×.
// ctx-summarize, ctx-trim and ctx-repair were under 2× on 100 MB before they were held to
// it here (1.73-1.84×, 1.59-1.86×, 1.46-1.49×, binary included); on 20 MB they grow by
// 1.68×, 1.53-1.59× and 1.39-1.44× (ctx-summarize by 1.90-1.92× without the limit, the
// other two never reach it): their ceilings catch a document held twice, as the others do.
var jsonCeiling = map[string]float64{"ctx-count": 2.0, "ctx-persist": 2.85, "ctx-budget": 2.8, "ctx-snip": 2.25, "ctx-convert": 2.1,
	"ctx-summarize": 2.0, "ctx-trim": 1.9, "ctx-repair": 1.75}

// memSize is the size of TestMemory's inputs: large enough that the input, not the
// runtime's own few megabytes, decides the peak.
const memSize = 20 << 20

// TestMemoryChild is one run of TestMemory in a process of its own: the tool, the input
// read from a file argument or from a pipe, and the tool's arguments come from
// CTXKIT_MEMORY_CHILD; it prints the peak heap and the input's size.
func TestMemoryChild(t *testing.T) {
	spec := os.Getenv("CTXKIT_MEMORY_CHILD")
	if spec == "" {
		t.Skip("run by TestMemory")
	}
	parts := strings.Split(spec, "\t")
	tool, mode, input, args := parts[0], parts[1], parts[2], parts[3:]
	st, err := os.Stat(input)
	if err != nil {
		t.Fatal(err)
	}
	var stdin io.Reader = strings.NewReader("")
	if mode == "stdin" {
		f, err := os.Open(input)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		stdin = bufio.NewReader(f) // not an *os.File: read as a pipe is
	} else {
		args = append(args, input)
	}
	var stderr strings.Builder
	before := procStatusKB(t, "VmRSS")
	if code := mains[tool](args, stdin, io.Discard, &stderr, os.Getenv); code != 0 {
		t.Fatalf("%s exited %d: %s", tool, code, stderr.String())
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("memory: %d %s %d\n", ms.HeapSys, strconv.FormatInt(st.Size(), 10), (procStatusKB(t, "VmHWM")-before)*1024)
}

// procStatusKB reads a figure in kB from /proc/self/status (VmRSS, the resident set now;
// VmHWM, its peak), or -1 where there is none (not Linux).
func procStatusKB(t *testing.T, name string) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, name+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("%s in /proc/self/status: %v", name, err)
			}
			return n
		}
	}
	return -1
}
