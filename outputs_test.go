package ctxkit_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// outputsDir holds real command outputs with planted failures, written by
// scripts/gen-outputs.sh: the measure for ctx-budget's cut (issue 18). realOutputsDir holds
// the larger set of real programs run on real code, with faults and without, written by
// scripts/gen-real-outputs.sh (issue 38).
const (
	outputsDir     = "testdata/outputs"
	realOutputsDir = "testdata/real-outputs"
)

// outputCase is one recorded command: its output as the agent's shell tool got it, the
// command, and the lines any cut must keep (in the plain view of plainLines).
type outputCase struct {
	Name string
	Cmd  string
	Out  []byte
	Keep []string
}

// loadOutputs reads every case of dir, sorted by name. It fails the test when a case lacks
// its .cmd or .keep, so a measurement built on it sees only whole cases.
func loadOutputs(t testing.TB, dir string) []outputCase {
	t.Helper()
	outs, err := filepath.Glob(filepath.Join(dir, "*.out"))
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) == 0 {
		t.Fatalf("no cases in %s: run its script (scripts/gen-outputs.sh, scripts/gen-real-outputs.sh)", dir)
	}
	sort.Strings(outs)
	var cases []outputCase
	for _, p := range outs {
		name := strings.TrimSuffix(filepath.Base(p), ".out")
		out, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		cmd, err := os.ReadFile(filepath.Join(dir, name+".cmd"))
		if err != nil {
			t.Fatalf("case %s: %v", name, err)
		}
		keep, err := os.ReadFile(filepath.Join(dir, name+".keep"))
		if err != nil {
			t.Fatalf("case %s: %v", name, err)
		}
		c := outputCase{Name: name, Cmd: strings.TrimRight(string(cmd), "\n"), Out: out}
		for _, l := range strings.Split(strings.TrimRight(string(keep), "\n"), "\n") {
			if l != "" {
				c.Keep = append(c.Keep, l)
			}
		}
		cases = append(cases, c)
	}
	return cases
}

var (
	// cursor to column 1 (ESC [ G, ESC [ 0 G, ESC [ 1 G) acts as a carriage return.
	toColumnOne = regexp.MustCompile(`\x1b\[[01]?G`)
	// CSI sequences (colours, erase line, cursor moves), OSC sequences (titles, links), and
	// the two-byte escapes.
	ansiEscape = regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]`)
)

// trailingSpace is the white space trimmed from the end of a plain line.
const trailingSpace = " \t\r\f\v"

// plainLines is the view .keep lines are written in, the way a terminal shows the output:
// lines split on "\n"; within a line only what follows the last carriage return (or
// cursor-to-column-1 escape) counts, so progress redrawn in place shows its last state; ANSI
// escape sequences are removed, and so is trailing white space. scripts/gen-outputs.sh does
// the same in perl.
func plainLines(out []byte) []string {
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		l = strings.TrimRight(l, trailingSpace)
		l = toColumnOne.ReplaceAllString(l, "\r")
		if j := strings.LastIndexByte(l, '\r'); j >= 0 {
			l = l[j+1:]
		}
		l = ansiEscape.ReplaceAllString(l, "")
		lines[i] = strings.TrimRight(l, trailingSpace)
	}
	return lines
}

// TestOutputsAreConsistent checks the measures themselves: every case is whole, every line
// it says to keep is a line of its output, every output is big enough to be cut (the
// first set's over 10,000 characters; the real set's over 4,000, and measured at a cap
// only where it is over it), and each set stays small enough to live in the repository.
func TestOutputsAreConsistent(t *testing.T) {
	for _, set := range []struct {
		dir         string
		least, most int
	}{{outputsDir, 10000, 4 << 20}, {realOutputsDir, 4000, 6 << 20}} {
		t.Run(filepath.Base(set.dir), func(t *testing.T) { outputsConsistent(t, set.dir, set.least, set.most) })
	}
}

func outputsConsistent(t *testing.T, dir string, least, most int) {
	for _, c := range loadOutputs(t, dir) {
		t.Run(c.Name, func(t *testing.T) {
			if n := len(c.Out); n <= least {
				t.Errorf("output has %d bytes, want more than %d", n, least)
			}
			if c.Cmd == "" || strings.Contains(c.Cmd, "\n") {
				t.Errorf("command %q is not one line", c.Cmd)
			}
			if len(c.Keep) == 0 {
				t.Error("nothing to keep")
			}
			have := map[string]bool{}
			for _, l := range plainLines(c.Out) {
				have[l] = true
			}
			for _, k := range c.Keep {
				if !have[k] {
					t.Errorf("keep line is not a line of the plain output: %q", k)
				}
			}
		})
	}
	others, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, p := range others {
		if fi, err := os.Stat(p); err == nil {
			total += fi.Size()
		}
		switch filepath.Ext(p) {
		case ".out", ".md":
		case ".cmd", ".keep":
			if _, err := os.Stat(strings.TrimSuffix(p, filepath.Ext(p)) + ".out"); err != nil {
				t.Errorf("%s has no .out", p)
			}
		default:
			t.Errorf("unexpected file %s", p)
		}
	}
	if total >= int64(most) {
		t.Errorf("the set is %d bytes, want under %d MB", total, most>>20)
	}
}

// TestPlainLines pins the plain view on the shapes the recorded tools produce.
func TestPlainLines(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"\x1b[1m\x1b[33mwarning\x1b[0m: unused  \n", "warning: unused"},
		{"Receiving: 10%\rReceiving: 100%, done.\n", "Receiving: 100%, done."},
		{"\u2834\x1b[1G\x1b[0Knpm error code 1\r\n", "npm error code 1"},
		{"FAIL\texample.com/x\t0.005s\n", "FAIL\texample.com/x\t0.005s"},
		{"    indented\t \n", "    indented"},
	} {
		if got := plainLines([]byte(tc.in))[0]; got != tc.want {
			t.Errorf("plainLines(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := strings.Join(plainLines([]byte("a\nb")), "|"); got != "a|b" {
		t.Errorf("plainLines does not split on newlines: %q", got)
	}
}
