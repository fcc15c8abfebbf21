package summarize

import (
	"regexp"
	"strings"
	"testing"
)

// TestHelpStatesShares: --help says what share of the summarized tokens --user-tokens and
// the restored files may take as the code computes it (issue 34: it said a tenth for the
// files while the code took a twentieth).
func TestHelpStatesShares(t *testing.T) {
	code, help, errs := runMain(t, nil, "--help")
	if code != 0 || errs != "" {
		t.Fatalf("--help: exit %d stderr %q", code, errs)
	}
	help = strings.Join(strings.Fields(help), " ") // kong wraps the lines
	ordinal := map[int]string{2: "half", 4: "quarter", 5: "fifth", 10: "tenth", 20: "twentieth"}
	for _, c := range []struct {
		flag  string
		share int
	}{{"--user-tokens", userShare}, {"--restore-tokens", restoreShare}} {
		word, ok := ordinal[c.share]
		if !ok {
			t.Fatalf("no word for 1/%d: add it", c.share)
		}
		m := regexp.MustCompile(regexp.QuoteMeta(c.flag) + `=N (.*?) \(default`).FindStringSubmatch(help)
		if m == nil {
			t.Fatalf("--help has no line for %s:\n%s", c.flag, help)
		}
		if want := "at most a " + word + " of what is summarized"; !strings.Contains(m[1], want) {
			t.Errorf("%s: help %q does not say %q (the code takes 1/%d)", c.flag, m[1], want, c.share)
		}
	}
}
