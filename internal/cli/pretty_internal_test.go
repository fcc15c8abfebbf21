package cli

import "testing"

func TestPrettyJSON(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a":1}`, "{\n  \"a\": 1\n}\n"},
		{"[1,2]\n", "[\n  1,\n  2\n]\n"},
		{"{\"a\":1}\n{\"b\":\"\\u003c\"}\n", "{\n  \"a\": 1\n}\n{\n  \"b\": \"\\u003c\"\n}\n"},
		{"{\"a\":1}\nnot json\n{\"b\":2}", "{\n  \"a\": 1\n}\nnot json\n{\n  \"b\": 2\n}\n"},
		{"{\"a\":1}\r\n\r\n", "{\n  \"a\": 1\n}\r\n\r\n"},
		{"not json at all", "not json at all"},
		{"", ""},
	} {
		if got := string(prettyJSON([]byte(tc.in))); got != tc.want {
			t.Errorf("prettyJSON(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
