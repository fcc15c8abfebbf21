package redact

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestLoose: error messages (llm's Redact before this package): keys echoed by a server,
// in any shape, and what ordinary error text holds stays.
func TestLoose(t *testing.T) {
	r := New().Loose()
	const key = "sk-ant-api03-AbCdEf0123456789xyzXYZ"
	for _, tc := range []struct{ in, want string }{
		{"Incorrect API key provided: " + key + ".", "Incorrect API key provided: [redacted: anthropic-api-key]."},
		{"Incorrect API key provided: sk-proj-abc1****************wxyz.", "Incorrect API key provided: [redacted: openai-api-key]."},
		{"invalid x-api-key: nokeyshape12345", "invalid x-api-key: [redacted: credential]"},
		{`{"authorization": "Bearer abcdef.ghijkl"}`, `{"authorization": "Bearer [redacted: credential]"}`},
		{"token=Zx9Qm2Lp7Rt4Vw8Ny3Kb6Hs1Jd5Fg0Ac", "token=[redacted: token]"},
		{"unknown key Zx9Qm2Lp7Rt4Vw8Ny3Kb6Hs1Jd5Fg0Ac rejected", "unknown key [redacted: token] rejected"},
		{"blob 0123456789abcdef0123456789abcdef0123 at /var/lib/some_long_directory_name_here", "blob 0123456789abcdef0123456789abcdef0123 at /var/lib/some_long_directory_name_here"},
		{"HTTP 529: Overloaded", "HTTP 529: Overloaded"},
		{"prompt is too long: 210000 tokens > 200000 maximum", "prompt is too long: 210000 tokens > 200000 maximum"},
	} {
		if got := r.String(tc.in); got != tc.want {
			t.Errorf("Loose(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := r.WithKeys("hunter2hunter2").String("the key hunter2hunter2 was refused"); strings.Contains(got, "hunter2") {
		t.Errorf("given key kept: %q", got)
	}
	if got := r.WithKeys("hunter2/hunter2+x=").String("GET /v1?k=hunter2%2Fhunter2%2Bx%3D refused"); strings.Contains(got, "hunter2") {
		t.Errorf("given key, URL-encoded, kept: %q", got)
	}
}

// TestURLEncoded: a server echoing the URL it was sent echoes the key URL-encoded (issue
// 36): the shapes are matched on the text decoded, and what matched goes as written.
func TestURLEncoded(t *testing.T) {
	r := New().Loose()
	for _, tc := range []struct{ in, want string }{
		{"Incorrect API key provided: sk-ant-api03%2DAbCdEf0123456789xyzXYZ.", "Incorrect API key provided: [redacted: anthropic-api-key]."},
		{"key sk%2Dant%2Dapi03%2dAbCdEf0123456789xyzXYZ rejected", "key [redacted: anthropic-api-key] rejected"},
		{"twice: sk-ant-api03%252DAbCdEf0123456789xyzXYZ", "twice: [redacted: anthropic-api-key]"},
		{"GET /v1/messages?x-api-key%3A%20nokeyshape12345 401", "GET /v1/messages?x-api-key%3A%20[redacted: credential] 401"},
		{"url https://h/v1?key%3Dsk-ant-api03-AbCdEf0123&x=1", "url https://h/v1?key%3D[redacted: anthropic-api-key]&x=1"},
		{"header authorization%3A%20Bearer%20abcdef.ghijkl", "header authorization%3A%20Bearer%20[redacted: credential]"},
		{"api_key=Zx9Qm2Lp7Rt4%2BVw8Ny3Kb6Hs1Jd5Fg0Ac%3D%3D", "api_key=[redacted: api-key]"},
		{"100% done, 50%2 off, %zz", "100% done, 50%2 off, %zz"},
		{"read %2Fvar%2Flib%2Fsome_long_directory_name_here failed", "read %2Fvar%2Flib%2Fsome_long_directory_name_here failed"},
	} {
		if got := r.String(tc.in); got != tc.want {
			t.Errorf("Loose(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestIdempotentAndJSONSafe: redacting twice gives what redacting once gave, and a JSON
// document redacted whole stays valid JSON.
func TestIdempotentAndJSONSafe(t *testing.T) {
	r := New()
	doc, _ := json.Marshal(map[string]any{"messages": []any{map[string]any{"role": "user", "content": "" +
		"export OPENAI_API_KEY=sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z\n" +
		"DB_PASSWORD=correct-horse-battery\n" +
		`{"api_key": "Zx9Qm2Lp7Rt4Vw8Ny3Kb6Hs1Jd5Fg0Ac", "client_secret": "hunter22"}` + "\n" +
		"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn\n-----END RSA PRIVATE KEY-----\n" +
		"postgres://app:s3cr3t-pw@db.internal:5432/app"}}})
	once := r.Bytes(doc)
	if !json.Valid(once) {
		t.Fatalf("redacted JSON is not valid: %s", once)
	}
	for _, secret := range []string{"sk-proj-Ab3d", "correct-horse", "Zx9Qm2", "hunter22", "MIIEow", "s3cr3t-pw"} {
		if strings.Contains(string(once), secret) {
			t.Errorf("%q survived: %s", secret, once)
		}
	}
	if twice := r.Bytes(once); string(twice) != string(once) {
		t.Errorf("not idempotent:\n%s\n%s", once, twice)
	}
	var nilR *Redactor
	if got := nilR.String("sk-ant-api03-AbCdEf0123456789xyzXYZ"); got != "sk-ant-api03-AbCdEf0123456789xyzXYZ" {
		t.Errorf("a nil Redactor changed text: %q", got)
	}
}

// TestPatterns: a user's patterns file: comments, a named group for the kind, errors
// with the line.
func TestPatterns(t *testing.T) {
	ps, err := ParsePatterns("p.txt", "# acme tokens\n\nacme=(?P<acme_token>[a-z0-9]{12})\n\\bINT-[0-9]{6}\\b\n")
	if err != nil {
		t.Fatal(err)
	}
	got := New(ps...).String("login acme=abcdef123456 ticket INT-004211 done")
	if want := "login acme=[redacted: acme-token] ticket [redacted: custom] done"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := ParsePatterns("p.txt", "ok\n(unclosed\n"); err == nil || !strings.Contains(err.Error(), "p.txt:2") {
		t.Errorf("bad pattern: err %v, want it to name p.txt:2", err)
	}
	if _, err := ParsePatterns("p.txt", "a*\n"); err == nil {
		t.Errorf("a pattern matching the empty string was accepted")
	}
}

// TestUserinfo: an URL's user information goes whole, a token given as the user too.
func TestUserinfo(t *testing.T) {
	for in, want := range map[string]string{
		`got "ftp://u:p@example.com"`:        `got "ftp://REDACTED@example.com"`,
		`got "https://ghp_abc@github.com/x"`: `got "https://REDACTED@github.com/x"`,
		`got "https://example.com/a@b"`:      `got "https://example.com/a@b"`,
		`dial tcp 127.0.0.1:8377: refused`:   `dial tcp 127.0.0.1:8377: refused`,
	} {
		if got := Userinfo(in); got != want {
			t.Errorf("Userinfo(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestKinds: the marker names what was found.
func TestKinds(t *testing.T) {
	r := New()
	for _, c := range []struct{ in, want string }{
		{"id AKIAIOSFODNN7EXAMPL2 in use", "id [redacted: aws-access-key] in use"},
		{"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n", "aws_secret_access_key = [redacted: aws-secret-key]\n"},
		{"token ghp_0123456789abcdefghijABCDEFGHIJ012345 ok", "token [redacted: github-token] ok"},
		{"glpat-AbCdEfGhIjKlMnOpQrSt", "[redacted: gitlab-token]"},
		{"SLACK=xoxb-123456789-1234567890-AbCdEfGhIjKlMnOpQrStUvWx", "SLACK=[redacted: slack-token]"},
		{"k=sk_live_0123456789abcdefABCDEF", "k=[redacted: stripe-key]"},
		{"postgres://app:hunter2@db:5432/x", "postgres://app:[redacted: url-password]@db:5432/x"},
		{"Authorization: Bearer abcdefghijklmnop0123456789", "Authorization: Bearer [redacted: bearer-token]"},
		{"DB_PASSWORD=postgres\n", "DB_PASSWORD=[redacted: password]\n"},
		{`{"client_secret": "s3cr3t-value"}`, `{"client_secret": "[redacted: secret]"}`},
		{"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIB\n-----END EC PRIVATE KEY-----", "[redacted: private-key]"},
		{"curl -u admin:Tr0ub4dor https://x", "curl -u admin:[redacted: password] https://x"},
		// what must stay
		{"commit 3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a", "commit 3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a"},
		{"max_tokens: 4096, tokenizer: o200k, public_key: ssh-ed25519 AAAAC3Nza", "max_tokens: 4096, tokenizer: o200k, public_key: ssh-ed25519 AAAAC3Nza"},
		{"--- PASS: TestFlushRecord (0.95s)", "--- PASS: TestFlushRecord (0.95s)"},
		{"docker run -u 1000:1000 img", "docker run -u 1000:1000 img"},
	} {
		if got := r.String(c.in); got != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// Find reads the caller's string in place until a first find is blanked: the string is
// never written, whatever is found in it, and what is found is what a copy gives.
func TestFindLeavesTheStringAlone(t *testing.T) {
	for _, s := range []string{
		"no secret here, only a key word and a token word",
		`password = "hunter2xyz!" then api_key: "AKIAIOSFODNN7EXAMPLE" and token=ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa`,
		`{"secret":"s3cr3t-V@lue-123","auth":"Bearer xyz"} sk-ant-api03-abcdefghijklmnopqrstuvwxyz`,
	} {
		b := []byte(s)
		in := string(b) // a string of its own, so a write through it would show
		before := strings.Clone(in)
		got := New().Find(in)
		if in != before {
			t.Fatalf("Find changed its input: %q", in)
		}
		if want := New().WithKeys("unused-key-12345").Find(before); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Find(%q) = %v, with the copy made first %v", s, got, want)
		}
	}
}

// scan's prefilters (the pair table, then the hashed first three bytes) never rule out a
// place where a literal starts: its finds are those of comparing every literal at every
// place, on text made of literals' pieces in both cases, cut anywhere.
func TestScanFindsEveryLiteralInPieces(t *testing.T) {
	x := literals()
	rng := rand.New(rand.NewPCG(5, 6))
	for n := 0; n < 3000; n++ {
		var b []byte
		for len(b) < 120 {
			l := x.lits[rng.IntN(len(x.lits))].s
			if rng.IntN(3) == 0 {
				l = strings.ToUpper(l)
			}
			b = append(b, l[:1+rng.IntN(len(l))]...)
			if rng.IntN(4) == 0 {
				b = append(b, " ~_-.="[rng.IntN(6)])
			}
		}
		b = b[:rng.IntN(len(b)+1)]
		gp, gn := scan(b)
		wp, wn := scanEach(b)
		if fmt.Sprint(gp, gn) != fmt.Sprint(wp, wn) {
			t.Fatalf("scan(%q) = %v %v, want %v %v", b, gp, gn, wp, wn)
		}
	}
}
