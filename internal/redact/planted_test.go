package redact

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/heldout"
	"github.com/ctxkit/ctxkit/internal/testgen"
)

// plantedFile is the planted set, written by
// go run ./scripts/gendoc -planted -seed 1 -o testdata/redact/planted.jsonl
var plantedFile = filepath.Join("..", "..", "testdata", "redact", "planted.jsonl")

func readPlanted(t testing.TB) []testgen.SecretCase {
	data, err := os.ReadFile(plantedFile)
	if err != nil {
		t.Fatal(err)
	}
	var cases []testgen.SecretCase
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c testgen.SecretCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, c)
	}
	return cases
}

// TestPlantedCommitted: the committed set is what the generator makes.
func TestPlantedCommitted(t *testing.T) {
	data, err := os.ReadFile(plantedFile)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := testgen.WriteSecrets(&b, testgen.Secrets(1)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), data) {
		t.Fatalf("%s is not what the generator writes: run go run ./scripts/gendoc -planted -seed 1 -o testdata/redact/planted.jsonl", plantedFile)
	}
}

// score is one half's figures.
type score struct {
	secrets, caught, lookalikes, altered int
	missed, falsePos                     map[string]int
}

func (s *score) recall() float64 { return float64(s.caught) / float64(max(1, s.secrets)) }
func (s *score) fpRate() float64 { return float64(s.altered) / float64(max(1, s.lookalikes)) }

// measure redacts each case twice: as the text itself, and as the JSON string literal a
// document holds it in (what --redact sees). A secret is caught when its value is in
// neither output; a look-alike case is altered when either output differs from its input.
func measure(r *Redactor, cases []testgen.SecretCase) *score {
	s := &score{missed: map[string]int{}, falsePos: map[string]int{}}
	for _, c := range cases {
		lit, _ := json.Marshal(c.Text)
		outs := []string{r.String(c.Text), r.String(string(lit))}
		var plain string
		if err := json.Unmarshal([]byte(outs[1]), &plain); err != nil {
			plain = "\x00invalid JSON"
		}
		if c.Secret {
			for _, v := range c.Values {
				s.secrets++
				vl, _ := json.Marshal(v)
				if !strings.Contains(outs[0], v) && !strings.Contains(outs[1], string(vl[1:len(vl)-1])) && !strings.Contains(plain, v) && !strings.Contains(plain, "\x00") {
					s.caught++
				} else {
					s.missed[c.Detector]++
				}
			}
			continue
		}
		s.lookalikes++
		if outs[0] != c.Text || outs[1] != string(lit) {
			s.altered++
			s.falsePos[c.Detector]++
		}
	}
	return s
}

// TestPlanted: recall of the planted secrets at least 99%, look-alikes altered at most 1%,
// on each half; the test half's figures are the ones reported.
func TestPlanted(t *testing.T) {
	cases := readPlanted(t)
	var train, test []testgen.SecretCase
	for _, c := range cases {
		if heldout.Test(c.Name) {
			test = append(test, c)
		} else {
			train = append(train, c)
		}
	}
	r := New()
	for _, half := range []struct {
		name  string
		cases []testgen.SecretCase
	}{{"training", train}, {"test", test}} {
		s := measure(r, half.cases)
		t.Logf("%s half: recall %d/%d = %.2f%%, look-alikes altered %d/%d = %.2f%%", half.name, s.caught, s.secrets, 100*s.recall(), s.altered, s.lookalikes, 100*s.fpRate())
		if s.recall() < 0.99 || s.fpRate() > 0.01 {
			t.Errorf("%s half: recall %.2f%% (want >= 99%%), false positives %.2f%% (want <= 1%%); missed %v, altered %v", half.name, 100*s.recall(), 100*s.fpRate(), sorted(s.missed), sorted(s.falsePos))
		}
	}
}

func sorted(m map[string]int) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+itoa(v))
	}
	sort.Strings(out)
	return out
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
