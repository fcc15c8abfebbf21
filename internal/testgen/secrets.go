package testgen

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// The planted set that internal/redact is measured on: credentials of every format it
// detects, each in several realistic variants, embedded in the output of the tools an
// agent runs (cat of a .env file, curl -v, a failing test's log, git diff, docker inspect,
// grep over a config), and look-alikes that must survive (git commit ids, sha1/sha256
// digests, UUIDs, base64 images, npm integrity strings, lockfile hashes, ordinary
// identifiers). All values are random and made here: none is a real credential.

// SecretCase is one planted text.
type SecretCase struct {
	// Name is unique; internal/heldout splits the cases by it.
	Name string `json:"name"`
	// Detector is the kind of secret planted (the marker's word), or "lookalike".
	Detector string `json:"detector"`
	// Secret says Values are secrets that must not survive; else look-alikes that must,
	// and nothing else in Text may change.
	Secret bool     `json:"secret"`
	Text   string   `json:"text"`
	Values []string `json:"values"`
}

// secretKind makes one secret value and the variable name it is usually kept under.
type secretKind struct {
	detector string
	value    func(r *rng) string
	names    []string
	// contexts limits the contexts the value is planted in (indices into secretContexts);
	// nil: all of them. A value known only by its name (an AWS secret key) goes only where
	// it has one.
	contexts []int
}

func alnum(r *rng, n int) string { return r.base62("", n) }

func fromAlphabet(r *rng, alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.intn(len(alphabet))]
	}
	return string(b)
}

const (
	urlSafe = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-"
	base32u = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	lowerAZ = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	hexLow  = "0123456789abcdef"
)

func b64url(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// password is a human-made password: words, digits and a symbol.
func password(r *rng) string {
	words := []string{"correct", "horse", "battery", "staple", "Summer", "winter", "dragon", "Purple", "monkey", "tiger", "Sunshine", "falcon"}
	sep := []string{"", "-", "_", "!", "#", "."}
	return r.pick(words) + r.pick(sep) + r.pick(words) + fmt.Sprint(r.between(1, 9999)) + r.pick([]string{"", "!", "?", "$", "%"})
}

func pemBody(r *rng, lines int) string {
	var b strings.Builder
	for i := 0; i < lines; i++ {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(r.b64(48))
	}
	return b.String()
}

var secretKinds = []secretKind{
	{detector: "aws-access-key", value: func(r *rng) string { return r.pick([]string{"AKIA", "ASIA"}) + fromAlphabet(r, base32u, 16) },
		names: []string{"AWS_ACCESS_KEY_ID", "aws_access_key_id", "AccessKeyId"}},
	{detector: "aws-secret-key", value: func(r *rng) string {
		return fromAlphabet(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", 40)
	},
		names: []string{"AWS_SECRET_ACCESS_KEY", "aws_secret_access_key", "SecretAccessKey"}, contexts: named},
	{detector: "gcp-api-key", value: func(r *rng) string { return "AIza" + fromAlphabet(r, urlSafe, 35) },
		names: []string{"GOOGLE_API_KEY", "GEMINI_API_KEY", "apiKey"}},
	{detector: "gcp-oauth-secret", value: func(r *rng) string { return "GOCSPX-" + fromAlphabet(r, urlSafe, 28) },
		names: []string{"GOOGLE_CLIENT_SECRET", "client_secret"}},
	{detector: "azure-storage-key", value: func(r *rng) string {
		return fromAlphabet(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", 86) + "=="
	},
		names: []string{"AZURE_STORAGE_CONNECTION_STRING"}, contexts: []int{ctxEnv, ctxExport, ctxDockerEnv, ctxLog}},
	{detector: "azure-client-secret", value: func(r *rng) string {
		return fromAlphabet(r, lowerAZ, 3) + fmt.Sprint(r.intn(10)) + "Q~" + fromAlphabet(r, urlSafe[:62]+"_~.", 34)
	}, names: []string{"AZURE_CLIENT_SECRET", "clientSecret"}},
	{detector: "openai-api-key", value: func(r *rng) string {
		switch r.intn(3) {
		case 0:
			return "sk-proj-" + fromAlphabet(r, urlSafe, 156)
		case 1:
			return "sk-svcacct-" + fromAlphabet(r, urlSafe, 120)
		}
		return "sk-" + alnum(r, 20) + "T3BlbkFJ" + alnum(r, 20)
	}, names: []string{"OPENAI_API_KEY", "openai_api_key", "apiKey"}},
	{detector: "anthropic-api-key", value: func(r *rng) string { return "sk-ant-api03-" + fromAlphabet(r, urlSafe, 93) + "AA" },
		names: []string{"ANTHROPIC_API_KEY", "anthropic_api_key", "x-api-key"}},
	{detector: "openrouter-api-key", value: func(r *rng) string { return "sk-or-v1-" + fromAlphabet(r, hexLow, 64) },
		names: []string{"OPENROUTER_API_KEY"}},
	{detector: "groq-api-key", value: func(r *rng) string { return "gsk_" + alnum(r, 52) }, names: []string{"GROQ_API_KEY"}},
	{detector: "xai-api-key", value: func(r *rng) string { return "xai-" + alnum(r, 80) }, names: []string{"XAI_API_KEY"}},
	{detector: "huggingface-token", value: func(r *rng) string { return "hf_" + fromAlphabet(r, lowerAZ, 34) }, names: []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"}},
	{detector: "replicate-api-token", value: func(r *rng) string { return "r8_" + alnum(r, 37) }, names: []string{"REPLICATE_API_TOKEN"}},
	{detector: "perplexity-api-key", value: func(r *rng) string { return "pplx-" + alnum(r, 48) }, names: []string{"PERPLEXITY_API_KEY"}},
	{detector: "github-token", value: func(r *rng) string {
		if r.chance(0.25) {
			return "github_pat_" + alnum(r, 22) + "_" + alnum(r, 59)
		}
		return r.pick([]string{"ghp_", "gho_", "ghs_", "ghu_"}) + alnum(r, 36)
	}, names: []string{"GITHUB_TOKEN", "GH_TOKEN", "token"}},
	{detector: "gitlab-token", value: func(r *rng) string {
		return r.pick([]string{"glpat-", "glpat-", "gldt-"}) + fromAlphabet(r, urlSafe, 20)
	},
		names: []string{"GITLAB_TOKEN", "CI_JOB_TOKEN", "private_token"}},
	{detector: "slack-token", value: func(r *rng) string {
		return r.pick([]string{"xoxb-", "xoxp-", "xoxa-"}) + fmt.Sprint(r.between(100000000, 999999999)) + "-" + fmt.Sprint(r.between(1000000000, 9999999999)) + "-" + alnum(r, 24)
	}, names: []string{"SLACK_BOT_TOKEN", "SLACK_TOKEN", "slack_token"}},
	{detector: "slack-webhook", value: func(r *rng) string {
		return "T" + fromAlphabet(r, base32u[:26]+"0123456789", 8) + "/B" + fromAlphabet(r, base32u[:26]+"0123456789", 8) + "/" + alnum(r, 24)
	}, names: []string{"SLACK_WEBHOOK_URL"}, contexts: []int{ctxLog, ctxEnv, ctxJSON, ctxDiff}},
	{detector: "stripe-key", value: func(r *rng) string { return r.pick([]string{"sk_live_", "sk_test_", "rk_live_"}) + alnum(r, 99) },
		names: []string{"STRIPE_SECRET_KEY", "stripe_key", "stripeKey"}},
	{detector: "stripe-webhook-secret", value: func(r *rng) string { return "whsec_" + alnum(r, 32) }, names: []string{"STRIPE_WEBHOOK_SECRET"}},
	{detector: "npm-token", value: func(r *rng) string { return "npm_" + alnum(r, 36) }, names: []string{"NPM_TOKEN", "npm_token"}},
	{detector: "pypi-token", value: func(r *rng) string { return "pypi-AgEIcHlwaS5vcmc" + fromAlphabet(r, urlSafe, 140) }, names: []string{"PYPI_TOKEN", "TWINE_PASSWORD"}},
	{detector: "sendgrid-api-key", value: func(r *rng) string { return "SG." + fromAlphabet(r, urlSafe, 22) + "." + fromAlphabet(r, urlSafe, 43) }, names: []string{"SENDGRID_API_KEY"}},
	{detector: "digitalocean-token", value: func(r *rng) string { return "dop_v1_" + fromAlphabet(r, hexLow, 64) }, names: []string{"DIGITALOCEAN_TOKEN"}},
	{detector: "jwt", value: func(r *rng) string {
		h := b64url(`{"alg":"` + r.pick([]string{"HS256", "RS256", "ES256"}) + `","typ":"JWT"}`)
		p := b64url(fmt.Sprintf(`{"sub":"%d","name":"%s","iat":%d,"exp":%d}`, r.between(1000, 99999), r.pick([]string{"Ada Lovelace", "alice", "svc-deploy"}), 1700000000+r.intn(1e7), 1710000000+r.intn(1e7)))
		return h + "." + p + "." + fromAlphabet(r, urlSafe, 43)
	}, names: []string{"ACCESS_TOKEN", "id_token", "authToken", "SESSION_TOKEN"}},
	{detector: "bearer-token", value: func(r *rng) string { return alnum(r, r.between(32, 64)) }, names: []string{"Authorization"}, contexts: []int{ctxCurl}},
	{detector: "env-secret", value: func(r *rng) string {
		switch r.intn(3) {
		case 0:
			return password(r)
		case 1:
			return r.hex(32)
		}
		return alnum(r, 40)
	}, names: []string{"DB_PASSWORD", "SESSION_SECRET", "JWT_SECRET", "MAILGUN_API_KEY", "SENTRY_AUTH_TOKEN", "POSTGRES_PASSWORD", "SECRET_KEY_BASE", "REDIS_PASSWORD", "WEBHOOK_SECRET", "DATADOG_API_KEY", "password", "client_secret", "api_key", "secretKey", "db_password"}, contexts: append(named, ctxTraceback)},
}

// secretContexts are the tool outputs a value is planted in: each takes the variable
// name and the value.
const (
	ctxEnv = iota
	ctxExport
	ctxJSON
	ctxYAML
	ctxCode
	ctxDockerEnv
	ctxGrep
	ctxDiff
	ctxLog
	ctxCurl
	ctxTraceback
)

var named = []int{ctxEnv, ctxExport, ctxJSON, ctxYAML, ctxCode, ctxDockerEnv, ctxGrep, ctxDiff}

var secretContexts = map[int]func(r *rng, name, value string) string{
	ctxEnv: func(r *rng, name, value string) string {
		return "$ cat .env\nNODE_ENV=production\nPORT=" + fmt.Sprint(r.between(3000, 9000)) + "\n" + envName(name) + "=" + value + "\nLOG_LEVEL=info\n"
	},
	ctxExport: func(r *rng, name, value string) string {
		return "$ cat ~/.bashrc | tail -3\nalias ll='ls -la'\nexport " + envName(name) + "=\"" + value + "\"\nexport PATH=\"$HOME/go/bin:$PATH\"\n"
	},
	ctxJSON: func(r *rng, name, value string) string {
		return "$ cat config/settings.json\n{\n  \"service\": \"billing-api\",\n  \"region\": \"us-east-1\",\n  \"" + jsonName(name) + "\": \"" + value + "\",\n  \"timeout_ms\": " + fmt.Sprint(r.between(1000, 30000)) + "\n}\n"
	},
	ctxYAML: func(r *rng, name, value string) string {
		return "# deploy/values.yaml\nreplicaCount: 2\nimage:\n  repository: ghcr.io/acme/api\n  tag: v1." + fmt.Sprint(r.intn(20)) + ".0\nsecrets:\n  " + jsonName(name) + ": " + value + "\n"
	},
	ctxCode: func(r *rng, name, value string) string {
		return "src/client.ts:" + fmt.Sprint(r.between(3, 90)) + ":const " + camel(name) + " = \"" + value + "\";\nsrc/client.ts:" + fmt.Sprint(r.between(91, 120)) + ":export const client = new Client({ " + camel(name) + " });\n"
	},
	ctxDockerEnv: func(r *rng, name, value string) string {
		return "$ docker inspect api --format '{{json .Config.Env}}'\n[\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin\",\"" + envName(name) + "=" + value + "\",\"GOLANG_VERSION=1.22.3\"]\n"
	},
	ctxGrep: func(r *rng, name, value string) string {
		return "$ grep -rn '" + envName(name) + "' .\n./docker-compose.yml:14:      - " + envName(name) + "=" + value + "\n./README.md:40:Set `" + envName(name) + "` before running the server.\n"
	},
	ctxDiff: func(r *rng, name, value string) string {
		return "diff --git a/.env.example b/.env.example\nindex 3f2a1b9..8c4d2e1 100644\n--- a/.env.example\n+++ b/.env.example\n@@ -1,3 +1,4 @@\n DATABASE_HOST=localhost\n-" + envName(name) + "=\n+" + envName(name) + "=" + value + "\n DEBUG=false\n"
	},
	ctxLog: func(r *rng, name, value string) string {
		return "2024-05-0" + fmt.Sprint(r.between(1, 9)) + "T10:1" + fmt.Sprint(r.intn(10)) + ":02Z INFO starting worker pid=" + fmt.Sprint(r.between(100, 9999)) + "\n2024-05-01T10:12:02Z DEBUG loaded credentials " + value + " from environment\n2024-05-01T10:12:03Z INFO ready\n"
	},
	ctxCurl: func(r *rng, name, value string) string {
		return "$ curl -v https://api.example.com/v1/items\n* Connected to api.example.com port 443\n> GET /v1/items HTTP/2\n> Host: api.example.com\n> Authorization: Bearer " + value + "\n> User-Agent: curl/8.5.0\n< HTTP/2 401\n{\"error\":\"unauthorized\"}\n"
	},
	ctxTraceback: func(r *rng, name, value string) string {
		return "Traceback (most recent call last):\n  File \"app/main.py\", line " + fmt.Sprint(r.between(10, 300)) + ", in <module>\n    client = Client(api_key=\"" + value + "\")\n  File \"app/client.py\", line 22, in __init__\n    raise AuthError(\"invalid key\")\nAuthError: invalid key\n"
	},
}

// envName is a variable name as an environment spells it.
func envName(name string) string {
	if isUpper(name) {
		return name
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'A' <= c && c <= 'Z':
			if i > 0 && name[i-1] != '_' {
				b.WriteByte('_')
			}
			b.WriteByte(c)
		case 'a' <= c && c <= 'z':
			b.WriteByte(c - 'a' + 'A')
		case c == '-' || c == '/' || c == ':' || c == '.':
			if b.Len() > 0 {
				b.WriteByte('_')
			}
		default:
			b.WriteByte(c)
		}
	}
	return strings.Trim(b.String(), "_")
}

func jsonName(name string) string {
	if isUpper(name) {
		return strings.ToLower(name)
	}
	return name
}

func camel(name string) string {
	parts := strings.FieldsFunc(strings.ToLower(envName(name)), func(c rune) bool { return c == '_' })
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return strings.Join(parts, "")
}

func isUpper(s string) bool { return s == strings.ToUpper(s) }

// plant embeds one secret of kind k in context c; some kinds need their own wrapping
// (a connection string, a webhook URL, a URL with a password, a private key).
func plant(r *rng, k *secretKind, c int) (text string, values []string) {
	name := r.pick(k.names)
	v := k.value(r)
	shown := v
	switch k.detector {
	case "azure-storage-key":
		shown = "DefaultEndpointsProtocol=https;AccountName=acme" + alnum(r, 6) + ";AccountKey=" + v + ";EndpointSuffix=core.windows.net"
	case "slack-webhook":
		shown = "https://hooks.slack.com/services/" + v
	}
	return secretContexts[c](r, name, shown), []string{v}
}

// special are the cases whose shape is not a value in a context: private keys, URLs
// with passwords, basic credentials, service-account files, SAS URLs.
func special(r *rng, i int) (detector, text string, values []string) {
	switch i % 13 {
	case 0:
		kind := r.pick([]string{"RSA ", "EC ", "OPENSSH ", "", "ENCRYPTED "})
		body := pemBody(r, r.between(4, 20))
		return "private-key", "$ cat ~/.ssh/deploy_key\n-----BEGIN " + kind + "PRIVATE KEY-----\n" + body + "\n-----END " + kind + "PRIVATE KEY-----\n", []string{strings.SplitN(body, "\n", 2)[0]}
	case 1:
		body := pemBody(r, r.between(8, 20))
		doc, _ := json.MarshalIndent(map[string]string{
			"type": "service_account", "project_id": "acme-" + alnum(r, 6), "private_key_id": r.hex(20),
			"private_key":  "-----BEGIN PRIVATE KEY-----\n" + body + "\n-----END PRIVATE KEY-----\n",
			"client_email": "deploy@acme.iam.gserviceaccount.com", "client_id": fmt.Sprint(r.between(100000000, 999999999)),
		}, "", "  ")
		return "private-key", "$ cat gcp-sa.json\n" + string(doc) + "\n", []string{strings.SplitN(body, "\n", 2)[0]}
	case 2:
		body := pemBody(r, r.between(6, 12))
		// cut off by a head -c or a truncated tool result: no END line
		return "private-key", "$ head -c 600 server.key\n-----BEGIN RSA PRIVATE KEY-----\n" + body[:min(len(body), 500)] + "\n", []string{body[:40]}
	case 3:
		pw := password(r)
		scheme := r.pick([]string{"postgres://app:", "mongodb+srv://admin:", "mysql://root:", "amqp://guest:", "redis://default:"})
		return "url-password", "Error: connect ECONNREFUSED\n    at Connection.connect (node_modules/pg/lib/connection.js:54:17)\n  DATABASE_URL used: " + scheme + pw + "@db-" + alnum(r, 5) + ".internal:5432/app?sslmode=require\n", []string{pw}
	case 4:
		tok := "ghp_" + alnum(r, 36)
		if r.chance(0.5) {
			tok = alnum(r, 24)
		}
		return "url-password", "$ git remote -v\norigin\thttps://ci-bot:" + tok + "@github.com/acme/api.git (fetch)\norigin\thttps://ci-bot:" + tok + "@github.com/acme/api.git (push)\n", []string{tok}
	case 5:
		cred := base64.StdEncoding.EncodeToString([]byte("deploy:" + password(r)))
		return "basic-auth", "> POST /api/v2/deploy HTTP/1.1\n> Host: ci.internal\n> Authorization: Basic " + cred + "\n> Content-Type: application/json\n< HTTP/1.1 403 Forbidden\n", []string{cred}
	case 6:
		sig := base64.StdEncoding.EncodeToString(r.bytes(32))
		enc := strings.NewReplacer("+", "%2B", "/", "%2F", "=", "%3D").Replace(sig)
		return "azure-sas-signature", "Uploading build.tar.gz to https://acme" + alnum(r, 4) + ".blob.core.windows.net/artifacts/build.tar.gz?sv=2022-11-02&ss=b&srt=o&sp=rwc&se=2025-01-01T00:00:00Z&sig=" + enc + "\nUpload failed: 403 AuthenticationFailed\n", []string{enc[:20]}
	case 8:
		auth := base64.StdEncoding.EncodeToString([]byte(r.pick([]string{"ci-bot", "deploy", "_json_key"}) + ":" + password(r)))
		return "docker-auth", "$ cat ~/.docker/config.json\n{\n\t\"auths\": {\n\t\t\"ghcr.io\": {\n\t\t\t\"auth\": \"" + auth + "\"\n\t\t}\n\t}\n}\n", []string{auth}
	case 9:
		pw := base64.StdEncoding.EncodeToString([]byte(password(r)))
		return "k8s-secret", "$ kubectl get secret db-credentials -o yaml\napiVersion: v1\ndata:\n  password: " + pw + "\n  username: YXBw\nkind: Secret\nmetadata:\n  name: db-credentials\ntype: Opaque\n", []string{pw}
	case 10:
		pw := r.pick([]string{r.hex(20), alnum(r, 32), password(r)})
		return "netrc-password", "$ cat ~/.netrc\nmachine api.heroku.com\n  login ada@example.com\n  password " + pw + "\nmachine git.heroku.com\n  login ada@example.com\n  password " + pw + "\n", []string{pw}
	case 11:
		pw := password(r)
		return "cli-password", "$ curl -sS -u admin:" + pw + " https://jenkins.internal/api/json\n{\"mode\":\"NORMAL\",\"nodeName\":\"\"}\n", []string{pw}
	case 12:
		tok := "npm_" + alnum(r, 36)
		return "npm-token", "$ cat ~/.npmrc\n//registry.npmjs.org/:_authToken=" + tok + "\nregistry=https://registry.npmjs.org/\n", []string{tok}
	}
	key := "AKIA" + fromAlphabet(r, base32u, 16)
	sec := fromAlphabet(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", 40)
	return "aws-secret-key", "$ cat ~/.aws/credentials\n[default]\naws_access_key_id = " + key + "\naws_secret_access_key = " + sec + "\nregion = eu-west-1\n", []string{key, sec}
}

// lookalikes are texts that hold no secret but look like one.
func lookalike(r *rng, i int) (what, text string, values []string) {
	switch i % 23 {
	case 0:
		c1, c2 := r.hex(20), r.hex(20)
		return "git-log", "$ git log -2 --format=fuller\ncommit " + c1 + "\nAuthor:     Ada <ada@example.com>\nDate:       Tue May 7 10:11:12 2024 +0200\n\n    fix: retry on 503\n\ncommit " + c2 + "\nMerge: " + c1[:7] + " " + r.hex(4)[:7] + "\n", []string{c1, c2}
	case 1:
		h1, h2 := r.hex(32), r.hex(32)
		return "sha256sum", "$ sha256sum dist/*\n" + h1 + "  dist/api-linux-amd64\n" + h2 + "  dist/api-darwin-arm64\n", []string{h1, h2}
	case 2:
		u1, u2 := r.uuid(), r.uuid()
		return "uuid", "{\"id\": \"" + u1 + "\", \"request_id\": \"" + u2 + "\", \"status\": \"queued\", \"trace_id\": \"" + r.hex(16) + "\"}\n", []string{u1, u2}
	case 3:
		img := makePNG(r, r.between(8, 40), r.between(8, 40))
		return "base64-image", "<img alt=\"chart\" src=\"" + img.dataURL() + "\"/>\n", []string{img.b64}
	case 4:
		img := makePNG(r, r.between(8, 40), r.between(8, 40))
		return "base64-image", "{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":\"" + img.b64 + "\"}}\n", []string{img.b64}
	case 5:
		integ := "sha512-" + r.b64(64)
		return "npm-integrity", "    \"node_modules/lodash\": {\n      \"version\": \"4.17.21\",\n      \"resolved\": \"https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz\",\n      \"integrity\": \"" + integ + "\",\n      \"license\": \"MIT\"\n    },\n", []string{integ}
	case 6:
		s1 := r.hex(32)
		return "cargo-lock", "[[package]]\nname = \"serde\"\nversion = \"1.0.197\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"" + s1 + "\"\n", []string{s1}
	case 7:
		h := "h1:" + r.b64(32)
		return "go-sum", "github.com/tidwall/gjson v1.20.1 " + h + "\ngithub.com/tidwall/gjson v1.20.1/go.mod h1:" + r.b64(32) + "\n", []string{h}
	case 8:
		d := "sha256:" + r.hex(32)
		return "docker-digest", "$ docker pull ghcr.io/acme/api:latest\nlatest: Pulling from acme/api\nDigest: " + d + "\nStatus: Downloaded newer image for ghcr.io/acme/api:latest\n", []string{d}
	case 9:
		p := "sha256:" + r.hex(32)
		return "poetry-lock", "[[package]]\nname = \"requests\"\nversion = \"2.31.0\"\nfiles = [\n    {file = \"requests-2.31.0-py3-none-any.whl\", hash = \"" + p + "\"},\n]\n", []string{p}
	case 10:
		y := "sha512-" + r.b64(64)
		return "yarn-lock", "react@^18.2.0:\n  version \"18.2.0\"\n  resolved \"https://registry.yarnpkg.com/react/-/react-18.2.0.tgz#" + r.hex(20) + "\"\n  integrity " + y + "\n", []string{y}
	case 11:
		return "identifiers", "src/auth.ts:12:export async function getAccessToken(refreshToken: string) {\nsrc/auth.ts:13:  const tokenType = \"Bearer\";\nsrc/auth.ts:14:  const token = await refresh(refreshToken);\nsrc/config.ts:3:export const TOKEN_EXPIRY_SECONDS = 3600;\nsrc/config.ts:4:const maxTokens = 4096;\n", []string{"getAccessToken", "refreshToken", "TOKEN_EXPIRY_SECONDS = 3600"}
	case 12:
		return "identifiers", "env:\n  OPENAI_API_KEY: ${{ secrets.OPENAI_API_KEY }}\n  DB_PASSWORD: ${DB_PASSWORD}\n  password: $PGPASSWORD\nmax_tokens: 4096\npublic_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + alnum(r, 43) + " ci@acme\n", []string{"${{ secrets.OPENAI_API_KEY }}", "${DB_PASSWORD}", "max_tokens: 4096"}
	case 13:
		sig := r.b64(r.between(200, 600))
		return "thinking-signature", "{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"" + sig + "\"}\n", []string{sig}
	case 14:
		e := "\"" + r.hex(16) + "\""
		return "etag", "< HTTP/2 200\n< etag: " + e + "\n< x-request-id: " + r.uuid() + "\n< cache-control: max-age=60\n", []string{e}
	case 16:
		names := []string{"TestDeleteMetric", "TestApplySchema", "TestFlushRecord", "TestBuildReport", "TestEncodeStore"}
		a, b := r.pick(names), r.pick(names)
		return "test-output", "=== RUN   " + a + "\n--- PASS: " + a + " (0." + fmt.Sprint(r.between(10, 99)) + "s)\n=== RUN   " + b + "\n--- PASS: " + b + " (0.0" + fmt.Sprint(r.intn(10)) + "s)\nPASS\nok  \tgithub.com/acme/api/store\t" + fmt.Sprint(r.between(1, 9)) + ".123s\n", []string{"--- PASS: " + a}
	case 17:
		return "yaml-keys", "      containers:\n        - name: api\n          env:\n            - name: DB_PASSWORD\n              valueFrom:\n                secretKeyRef:\n                  name: db-credentials\n                  key: password\n            - name: API_TOKEN\n              valueFrom:\n                secretKeyRef:\n                  key: token\n", []string{"key: password", "name: db-credentials"}
	case 18:
		return "identifiers", "src/store.go:" + fmt.Sprint(r.between(10, 400)) + ":\tsortKey: createdAt,\nsrc/store.go:88:\tpartition_key = \"tenant_id\"\nsrc/http.go:41:\treq.Header.Set(\"Authorization\", \"Bearer \"+token)\nsrc/http.go:42:\tpasswordHash := bcrypt.Hash(password)\n", []string{"sortKey: createdAt", "partition_key = \"tenant_id\""}
	case 19:
		return "prompt", "$ psql -h db.internal -U app\nPassword for user app: \npsql: error: connection to server failed: FATAL:  password authentication failed for user \"app\"\n$ ssh-add ~/.ssh/id_ed25519\nEnter passphrase for /home/ada/.ssh/id_ed25519: \nIdentity added: /home/ada/.ssh/id_ed25519 (ada@laptop)\n", []string{"password authentication failed"}
	case 20:
		k1 := "setup-uv-1-x86_64-unknown-linux-gnu-3.12." + fmt.Sprint(r.intn(10)) + "-" + r.hex(32)
		k2 := "node-cache-Linux-x64-npm-" + r.hex(32)
		return "ci-cache-key", "[CI/test-" + fmt.Sprint(r.between(1, 4)) + "]   | Cache restored from GitHub Actions cache with key: " + k1 + "\n[CI/test-1]   | Cache saved with key: " + k2 + "\ntime=\"2024-05-01T10:00:00Z\" level=info msg=\"deleted cache: &{ID:6 Key:" + k2 + " Version:" + r.hex(32) + "}\"\n", []string{k1, k2}
	case 21:
		next := base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf(`{"Marker":null,"boto_truncate_amount":%d,"ExclusiveStartKey":"%s"}`, r.between(1, 999), r.hex(8))))
		page := alnum(r, 40)
		return "pagination", "$ aws logs describe-log-groups --max-items 2\n{\n    \"logGroups\": [\n        {\"logGroupName\": \"/aws/lambda/api\", \"storedBytes\": " + fmt.Sprint(r.between(1000, 99999)) + "}\n    ],\n    \"NextToken\": \"" + next + "\"\n}\n$ gcloud ... --format=json | jq .nextPageToken\n\"" + page + "\"\n{\"items\": [], \"nextPageToken\": \"" + page + "\"}\n", []string{next, page}
	case 22:
		uid := fmt.Sprint(r.between(500, 2000))
		return "command-line", "$ docker run --rm -u " + uid + ":" + uid + " -v \"$PWD\":/src -w /src golang:1.22 go build ./...\n$ git push -u origin feature/retry-" + fmt.Sprint(r.intn(99)) + "\nbranch 'feature' set up to track 'origin/feature'.\n$ sort -u -t: -k1,1 /etc/group | head -2\nadm:x:4:syslog\n", []string{"-u " + uid + ":" + uid}
	}
	short := r.hex(4)[:7]
	return "git-short", "$ git rebase -i HEAD~3\npick " + short + " feat: add retries\npick " + r.hex(4)[:7] + " test: cover 503\nSuccessfully rebased and updated refs/heads/main.\n", []string{short}
}

// Secrets returns the planted set for seed: every secret kind in each of its contexts
// (twice, with other random values), the special shapes several times each, and as many
// look-alikes.
func Secrets(seed int64) []SecretCase {
	r := newRNG(seed)
	var cases []SecretCase
	n := 0
	add := func(detector string, secret bool, text string, values []string) {
		n++
		cases = append(cases, SecretCase{Name: fmt.Sprintf("%s-%03d", detector, n), Detector: detector, Secret: secret, Text: text, Values: values})
	}
	for ki := range secretKinds {
		k := &secretKinds[ki]
		ctxs := k.contexts
		if ctxs == nil {
			ctxs = []int{ctxEnv, ctxExport, ctxJSON, ctxYAML, ctxCode, ctxDockerEnv, ctxGrep, ctxDiff, ctxLog, ctxTraceback}
		}
		for rep := 0; rep < 2; rep++ {
			for _, c := range ctxs {
				text, values := plant(&r, k, c)
				add(k.detector, true, text, values)
			}
		}
	}
	for i := 0; i < 13*8; i++ {
		d, text, values := special(&r, i)
		add(d, true, text, values)
	}
	for i := 0; i < 23*24; i++ {
		what, text, values := lookalike(&r, i)
		add("lookalike-"+what, false, text, values)
	}
	return cases
}

// WriteSecrets writes cases as JSON lines.
func WriteSecrets(w io.Writer, cases []SecretCase) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, c := range cases {
		if err := enc.Encode(c); err != nil {
			return err
		}
	}
	return nil
}
