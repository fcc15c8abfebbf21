package budget

import (
	"encoding/json"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestTrimsAreTrimLeft: trimBlanks and trimLeftSet trim what strings.TrimLeft does with
// the same cut sets, on strings of those bytes, others, and bytes that are not ASCII.
func TestTrimsAreTrimLeft(t *testing.T) {
	units := []string{" ", "\t", "|", "0", "7", ",", ".", "^", "a", "é", "\xff", "\x80", "\n", "~"}
	r := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(units[r.IntN(len(units))])
		}
		s := b.String()
		if got, want := trimBlanks(s), strings.TrimLeft(s, " \t"); got != want {
			t.Fatalf("trimBlanks(%q) = %q, want %q", s, got, want)
		}
		if got, want := trimLeftSet(s, &pointerLead), strings.TrimLeft(s, " \t|0123456789"); got != want {
			t.Fatalf("trimLeftSet(%q, pointerLead) = %q, want %q", s, got, want)
		}
		if got, want := trimLeftSet(s, &numberBytes), strings.TrimLeft(s, "0123456789,."); got != want {
			t.Fatalf("trimLeftSet(%q, numberBytes) = %q, want %q", s, got, want)
		}
	}
}

// prettyJSONByDecoding is what prettyJSON stands for: every value of the stream decoded.
func prettyJSONByDecoding(lines []string) bool {
	first := 0
	for first < len(lines) && strings.TrimSpace(lines[first]) == "" {
		first++
	}
	if first == len(lines) {
		return false
	}
	if t := strings.TrimSpace(lines[first]); t != "{" && t != "[" {
		return false
	}
	dec := json.NewDecoder(strings.NewReader(strings.Join(lines[first:], "\n")))
	for values := 0; ; values++ {
		var v json.RawMessage
		if err := dec.Decode(&v); err == io.EOF {
			return values > 0
		} else if err != nil {
			return false
		}
	}
}

// TestPrettyJSONIsDecoding: prettyJSON, which validates a single value without decoding
// it, says what decoding the stream of values says.
func TestPrettyJSONIsDecoding(t *testing.T) {
	texts := []string{
		"{\n  \"a\": 1\n}", "\n\n[\n 1,\n 2\n]\n", "{\n}\n{\n}", "{\n}{}", "{\n}\n1 2", "{\n}\n12x",
		"{\n  \"a\": 1,\n}", "[\n1,\n2", "{\n\"a\": \"\\q\"\n}", "{\n\"a\": \"\x01\"\n}", "{\n\"a\":\"\xff\"\n}",
		"{\n}\n]", "  {  \n}", "{ \"a\": 1 }", "", "\n", "{", "[\n]\n\n", "{\n\"a\":tru\n}", "{\n}\n\"s\"",
	}
	// (encoding/json refuses a value nested deeper than 10,000; many brackets, not deep)
	deep := "[\n" + strings.Repeat("[", 10_000) + strings.Repeat("]", 10_001)
	wide := "[\n" + strings.Repeat("[],", 10_001) + "[]]"
	texts = append(texts, deep, deep[:len(deep)-1], deep[:len(deep)-2]+"]", wide, wide+"\n{\n}", wide[:len(wide)-1])
	for _, text := range texts {
		lines := strings.Split(text, "\n")
		want := prettyJSONByDecoding(lines)
		if got := prettyJSON(lines, ""); got != want {
			t.Errorf("prettyJSON(%.40q) = %v, decoding says %v", text, got, want)
		}
		if got := prettyJSON(lines, text); got != want {
			t.Errorf("prettyJSON(%.40q) given the text = %v, decoding says %v", text, got, want)
		}
	}
}
