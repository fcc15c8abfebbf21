package testgen

import (
	"strconv"
	"strings"
	"time"
)

// This file writes the text that fills tool results and messages: source code, JSON, logs,
// shell output and prose. Each generator takes a target size in bytes and stops at the first
// line boundary past it, so result sizes follow the distribution the session asks for.

var (
	nouns = []string{"user", "order", "item", "session", "token", "cache", "request", "response",
		"config", "store", "handler", "router", "queue", "worker", "event", "metric", "batch",
		"payload", "record", "index", "account", "invoice", "policy", "schema", "snapshot",
		"lease", "shard", "tenant", "report", "upload"}
	verbs = []string{"get", "list", "create", "update", "delete", "parse", "validate", "load",
		"save", "handle", "build", "fetch", "flush", "apply", "resolve", "encode", "decode",
		"merge", "sync", "retry", "refresh", "compute", "render", "publish", "scan"}
	adjs = []string{"pending", "stale", "active", "expired", "cached", "remote", "local",
		"default", "partial", "invalid", "nested", "empty", "concurrent", "primary", "legacy"}
	words = []string{"the", "a", "to", "of", "and", "in", "is", "that", "for", "it", "with",
		"as", "on", "be", "this", "by", "from", "or", "when", "which", "we", "can", "if", "but",
		"not", "all", "so", "then", "only", "each", "after", "before", "should", "would", "must",
		"value", "function", "error", "field", "request", "response", "handler", "cache", "test",
		"file", "line", "call", "state", "timeout", "retry", "context", "lock", "map", "slice",
		"client", "server", "service", "deploy", "build", "change", "behaviour", "path", "query",
		"result", "returns", "uses", "reads", "writes", "checks", "expects", "fails", "passes",
		"missing", "nil", "empty", "concurrent", "shared", "stale", "new", "old", "first",
		"last", "next", "current", "correct", "wrong", "safe", "explicit", "config", "option",
		"default", "limit", "size", "count", "order", "session", "token", "user", "tenant",
		"still", "already", "because", "instead", "again", "also", "here", "there", "now"}
	cjkSentences = []string{
		"该函数在处理并发请求时需要加锁，否则会出现数据竞争。",
		"请确认配置文件中的超时时间是否正确设置。",
		"缓存失效后，系统会重新从数据库加载订单数据。",
		"部署之前必须运行完整的测试套件，包括集成测试。",
		"如果令牌已过期，服务器返回 401 并要求客户端重新登录。",
		"日志中出现大量重试记录，说明下游服务响应变慢。",
		"このモジュールはユーザー認証とセッション管理を担当します。",
		"エラーが発生した場合は、ログを確認してから再実行してください。",
		"設定ファイルを変更したら、サーバーを再起動する必要があります。",
		"キャッシュのヒット率が下がった原因を調査しています。",
		"설정 파일을 수정한 후 서버를 다시 시작하세요.",
		"요청 처리 시간이 500밀리초를 넘으면 경고를 기록합니다.",
	}
	packages = []string{"server", "store", "auth", "queue", "billing", "client", "cache", "api"}
	goTypes  = []string{"string", "int", "int64", "bool", "time.Time", "[]byte", "*Order",
		"map[string]string", "[]Item", "error", "time.Duration", "float64"}
	logMsgs = []string{"request completed", "cache miss", "retrying upstream call",
		"connection reset by peer", "slow query", "token refreshed", "job enqueued",
		"job finished", "rate limit exceeded", "context deadline exceeded",
		"invalid payload", "lease renewed", "shard rebalanced", "health check ok"}
	routes = []string{"/api/v1/orders", "/api/v1/orders/{id}", "/api/v1/users/me",
		"/api/v1/invoices", "/api/v1/items", "/healthz", "/api/v1/sessions", "/api/v1/reports"}
)

func title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// ident returns a camelCase identifier such as loadPendingOrder.
func (r *rng) ident() string {
	switch r.intn(3) {
	case 0:
		return r.pick(verbs) + title(r.pick(nouns))
	case 1:
		return r.pick(adjs) + title(r.pick(nouns))
	default:
		return r.pick(nouns) + title(r.pick(nouns)) + "s"
	}
}

func (r *rng) typeName() string {
	return title(r.pick(nouns)) + r.pick([]string{"", "Store", "Request", "Config", "State", "Info"})
}

// sentence writes one English-looking sentence, now and then with a code span.
func (r *rng) sentence(b []byte) []byte {
	n := r.between(7, 20)
	for i := 0; i < n; i++ {
		w := r.pick(words)
		if i == 0 {
			w = title(w)
		} else {
			b = append(b, ' ')
		}
		if i > 0 && r.intn(14) == 0 {
			b = append(b, '`')
			b = append(b, r.ident()...)
			b = append(b, '`')
			continue
		}
		b = append(b, w...)
		if i < n-1 && r.intn(12) == 0 {
			b = append(b, ',')
		}
	}
	return append(b, '.')
}

func (r *rng) paragraph(b []byte, sentences int) []byte {
	for i := 0; i < sentences; i++ {
		if i > 0 {
			b = append(b, ' ')
		}
		b = r.sentence(b)
	}
	return b
}

func (r *rng) cjkParagraph(b []byte, sentences int) []byte {
	for i := 0; i < sentences; i++ {
		b = append(b, r.pick(cjkSentences)...)
	}
	return b
}

// goStmt appends one statement line (or a small block) at the given tab depth.
func (r *rng) goStmt(b []byte, depth int) []byte {
	ind := strings.Repeat("\t", depth)
	a, c := r.ident(), r.ident()
	switch r.intn(12) {
	case 0:
		b = append(b, ind+"if err := s."+a+"(ctx, "+c+"); err != nil {\n"+ind+"\treturn nil, fmt.Errorf(\""+r.pick(verbs)+" "+r.pick(nouns)+": %w\", err)\n"+ind+"}\n"...)
	case 1:
		b = append(b, ind+c+", ok := s."+a+"[id]\n"+ind+"if !ok {\n"+ind+"\treturn nil, ErrNotFound\n"+ind+"}\n"...)
	case 2:
		b = append(b, ind+"for _, "+r.pick(nouns)+" := range "+c+" {\n"+ind+"\t"+a+" = append("+a+", "+r.pick(nouns)+"."+title(r.pick(nouns))+")\n"+ind+"}\n"...)
	case 3:
		b = append(b, ind+a+" := make([]"+r.typeName()+", 0, len("+c+"))\n"...)
	case 4:
		b = append(b, ind+"ctx, cancel := context.WithTimeout(ctx, "+strconv.Itoa(r.between(1, 30))+"*time.Second)\n"+ind+"defer cancel()\n"...)
	case 5:
		b = append(b, ind+"s.log.Info(\""+r.pick(logMsgs)+"\", \""+r.pick(nouns)+"\", "+c+", \"elapsed\", time.Since(start))\n"...)
	case 6:
		b = append(b, ind+"select {\n"+ind+"case <-ctx.Done():\n"+ind+"\treturn nil, ctx.Err()\n"+ind+"case "+a+" := <-s."+c+":\n"+ind+"\t_ = "+a+"\n"+ind+"}\n"...)
	case 7:
		b = append(b, ind+"// "...)
		b = r.sentence(b)
		b = append(b, '\n')
	case 8:
		b = append(b, ind+"if "+a+" == nil || len("+c+") == 0 {\n"+ind+"\treturn nil, fmt.Errorf(\"%w: "+r.pick(adjs)+" "+r.pick(nouns)+" %q\", ErrInvalid, id)\n"+ind+"}\n"...)
	case 9:
		b = append(b, ind+a+", err := s.db.QueryContext(ctx, `SELECT id, name, status FROM "+r.pick(nouns)+"s WHERE tenant_id = $1 AND status <> 'deleted'`, tenantID)\n"...)
	case 10:
		b = append(b, ind+"s.mu.Lock()\n"+ind+"s."+a+"[id] = "+c+"\n"+ind+"s.mu.Unlock()\n"...)
	default:
		b = append(b, ind+a+" := "+c+"."+title(r.pick(verbs))+"("+strconv.Itoa(r.intn(100))+", \""+r.pick(adjs)+"\")\n"...)
	}
	return b
}

func goSource(r *rng, path string, target int) string {
	pkg := r.pick(packages)
	if i := strings.LastIndexByte(path, '/'); i > 0 {
		dir := path[:i]
		pkg = dir[strings.LastIndexByte(dir, '/')+1:]
	}
	b := make([]byte, 0, target+512)
	b = append(b, "// Package "+pkg+" "+r.pick(verbs)+"s "+r.pick(nouns)+"s for the "+r.pick(nouns)+" service.\npackage "+pkg+"\n\nimport (\n\t\"context\"\n\t\"errors\"\n\t\"fmt\"\n\t\"log/slog\"\n\t\"sync\"\n\t\"time\"\n)\n\n"...)
	b = append(b, "// ErrNotFound is returned when the requested record does not exist.\nvar ErrNotFound = errors.New(\""+pkg+": not found\")\n\nvar ErrInvalid = errors.New(\""+pkg+": invalid argument\")\n\n"...)
	typ := r.typeName()
	for len(b) < target {
		switch r.intn(4) {
		case 0:
			t := r.typeName()
			b = append(b, "// "+t+" "...)
			b = r.sentence(b)
			b = append(b, "\ntype "+t+" struct {\n"...)
			for i, n := 0, r.between(3, 9); i < n; i++ {
				f := r.ident()
				b = append(b, "\t"+title(f)+" "+r.pick(goTypes)+" `json:\""+f+",omitempty\"`\n"...)
			}
			b = append(b, "}\n\n"...)
		default:
			fn := title(r.pick(verbs)) + title(r.pick(nouns))
			b = append(b, "// "+fn+" "...)
			b = r.sentence(b)
			b = append(b, "\nfunc (s *"+typ+") "+fn+"(ctx context.Context, id string) (*"+r.typeName()+", error) {\n\tstart := time.Now()\n"...)
			for i, n := 0, r.between(3, 12); i < n; i++ {
				b = r.goStmt(b, 1)
			}
			b = append(b, "\treturn &"+r.typeName()+"{ID: id}, nil\n}\n\n"...)
		}
	}
	return string(b)
}

func pySource(r *rng, target int) string {
	b := make([]byte, 0, target+256)
	b = append(b, "#!/usr/bin/env python3\n\"\"\""...)
	b = r.sentence(b)
	b = append(b, "\"\"\"\n\nimport argparse\nimport json\nimport logging\nimport sys\nfrom dataclasses import dataclass\nfrom pathlib import Path\n\nlog = logging.getLogger(__name__)\n\n"...)
	for len(b) < target {
		fn := r.pick(verbs) + "_" + r.pick(nouns) + "s"
		b = append(b, "\ndef "+fn+"(path: Path, limit: int = "+strconv.Itoa(r.between(10, 1000))+") -> list[dict]:\n    \"\"\""...)
		b = r.sentence(b)
		b = append(b, "\"\"\"\n    rows = []\n    with path.open(encoding=\"utf-8\") as fh:\n        for line in fh:\n            rec = json.loads(line)\n            if rec.get(\""+r.pick(nouns)+"\") != \""+r.pick(adjs)+"\":\n                continue\n            rows.append(rec)\n"...)
		for i, n := 0, r.between(1, 5); i < n; i++ {
			b = append(b, "    "+r.pick(nouns)+"_"+r.pick(nouns)+" = {k: v for k, v in rows[-1].items() if k.startswith(\""+r.pick(verbs)+"\")} if rows else {}\n"...)
		}
		b = append(b, "    log.info(\""+r.pick(logMsgs)+": %d rows\", len(rows))\n    return rows[:limit]\n\n"...)
	}
	return string(b)
}

func tsSource(r *rng, target int) string {
	b := make([]byte, 0, target+256)
	b = append(b, "import { useEffect, useState } from 'react';\nimport { apiClient, type ApiError } from '../api/client';\n\n"...)
	for len(b) < target {
		t := r.typeName()
		b = append(b, "export interface "+t+" {\n"...)
		for i, n := 0, r.between(2, 7); i < n; i++ {
			b = append(b, "  "+r.ident()+r.pick([]string{": string;\n", ": number;\n", "?: boolean;\n", ": Date | null;\n"})...)
		}
		fn := r.pick(verbs) + t
		b = append(b, "}\n\nexport async function "+fn+"(id: string, signal?: AbortSignal): Promise<"+t+"> {\n  const res = await apiClient.get(`"+r.pick(routes)+"?id=${encodeURIComponent(id)}`, { signal });\n  if (!res.ok) {\n    throw new Error(`"+r.pick(verbs)+" failed: ${res.status} ${res.statusText}`);\n  }\n  return (await res.json()) as "+t+";\n}\n\n"...)
	}
	return string(b)
}

func markdown(r *rng, target int, cjk bool) string {
	b := make([]byte, 0, target+256)
	b = append(b, "# "+title(r.pick(nouns))+" service\n\n"...)
	for len(b) < target {
		switch r.intn(5) {
		case 0:
			b = append(b, "\n## "+title(r.pick(verbs))+" "+r.pick(nouns)+"s\n\n"...)
		case 1:
			for i, n := 0, r.between(2, 6); i < n; i++ {
				b = append(b, "- "...)
				if cjk {
					b = r.cjkParagraph(b, 1)
				} else {
					b = r.sentence(b)
				}
				b = append(b, '\n')
			}
			b = append(b, '\n')
		case 2:
			b = append(b, "```bash\ngo run ./cmd/api --config config/settings.json\ncurl -s localhost:8080"+r.pick(routes)+" | jq .\n```\n\n"...)
		default:
			if cjk {
				b = r.cjkParagraph(b, r.between(2, 6))
			} else {
				b = r.paragraph(b, r.between(2, 6))
			}
			b = append(b, "\n\n"...)
		}
	}
	return string(b)
}

// jsonDoc writes pretty-printed JSON (two-space indent) such as an API listing or a fixture.
func jsonDoc(r *rng, target int, clock time.Time) string {
	b := make([]byte, 0, target+512)
	b = append(b, "{\n  \"data\": [\n"...)
	for i := 0; ; i++ {
		if i > 0 {
			b = append(b, ",\n"...)
		}
		b = append(b, "    {\n      \"id\": \"ord_"+r.hex(6)+"\",\n      \"tenant_id\": "+strconv.Itoa(r.between(1, 40))+",\n      \"status\": \""+r.pick(adjs)+"\",\n      \"name\": \""+title(r.pick(adjs))+" "+r.pick(nouns)+"\",\n      \"created_at\": \""+clock.Add(-time.Duration(r.intn(1e6))*time.Second).Format(time.RFC3339)+"\",\n      \"amount\": "+strconv.Itoa(r.intn(100000))+"."+strconv.Itoa(r.intn(100))+",\n      \"tags\": [\""+r.pick(nouns)+"\", \""+r.pick(adjs)+"\"],\n      \"metrics\": {\n        \"p50_ms\": "+strconv.Itoa(r.between(1, 90))+",\n        \"p99_ms\": "+strconv.Itoa(r.between(90, 2000))+",\n        \"retries\": "+strconv.Itoa(r.intn(5))+"\n      }\n    }"...)
		if len(b) >= target {
			break
		}
	}
	b = append(b, "\n  ],\n  \"next_cursor\": \""+r.hex(8)+"\",\n  \"has_more\": true\n}\n"...)
	return string(b)
}

func yamlDoc(r *rng, target int) string {
	b := make([]byte, 0, target+128)
	b = append(b, "replicaCount: 3\nimage:\n  repository: ghcr.io/acme/widgets-api\n  tag: \"v1."+strconv.Itoa(r.intn(40))+".0\"\n"...)
	for len(b) < target {
		b = append(b, r.pick(nouns)+":\n  enabled: true\n  "+r.ident()+": "+strconv.Itoa(r.intn(5000))+"\n  "+r.ident()+": \""+r.pick(adjs)+"\"\n"...)
	}
	return string(b)
}

var levels = []string{"INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"}

// logLines writes structured server logs; now and then a goroutine trace or a localized line.
func logLines(r *rng, target int, clock time.Time) string {
	b := make([]byte, 0, target+512)
	t := clock.Add(-time.Hour)
	for len(b) < target {
		t = t.Add(time.Duration(r.intn(900)) * time.Millisecond)
		lvl := r.pick(levels)
		b = t.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z")
		b = append(b, " "+lvl+"\tinternal/"+r.pick(packages)+"/"+r.pick(nouns)+".go:"+strconv.Itoa(r.between(20, 600))+"\t"+r.pick(logMsgs)+"\t{\"method\":\"GET\",\"path\":\""+r.pick(routes)+"\",\"status\":"+strconv.Itoa([]int{200, 200, 200, 201, 404, 500, 503}[r.intn(7)])+",\"duration_ms\":"+strconv.Itoa(r.intn(2000))+",\"request_id\":\""+r.hex(8)+"\"}\n"...)
		if lvl == "ERROR" && r.intn(4) == 0 {
			b = append(b, "goroutine "+strconv.Itoa(r.between(1, 9000))+" [running]:\n"...)
			for i := 0; i < r.between(3, 8); i++ {
				b = append(b, "github.com/acme/widgets/internal/"+r.pick(packages)+".(*"+r.typeName()+")."+title(r.ident())+"(...)\n\t/repo/internal/"+r.pick(packages)+"/"+r.pick(nouns)+".go:"+strconv.Itoa(r.between(20, 600))+" +0x"+r.hex(2)+"\n"...)
			}
		}
		if r.intn(60) == 0 {
			b = append(b, "  message: "...)
			b = append(b, r.pick(cjkSentences)...)
			b = append(b, '\n')
		}
	}
	return string(b)
}

func goTestOutput(r *rng, target int, verbose, fail bool) string {
	b := make([]byte, 0, target+256)
	failed := false
	for len(b) < target || (fail && !failed) {
		pkg := "github.com/acme/widgets/internal/" + r.pick(packages)
		if verbose {
			for i, n := 0, r.between(3, 15); i < n; i++ {
				name := "Test" + title(r.pick(verbs)) + title(r.pick(nouns))
				b = append(b, "=== RUN   "+name+"\n"...)
				if r.intn(3) == 0 {
					b = append(b, "    "+r.pick(nouns)+"_test.go:"+strconv.Itoa(r.between(20, 300))+": "...)
					b = r.sentence(b)
					b = append(b, '\n')
				}
				b = append(b, "--- PASS: "+name+" (0."+strconv.Itoa(r.between(10, 99))+"s)\n"...)
			}
		}
		if fail && !failed && (len(b) >= target/2 || r.intn(3) == 0) {
			failed = true
			name := "TestHandle" + title(r.pick(nouns))
			b = append(b, "--- FAIL: "+name+" (0.01s)\n    handler_test.go:"+strconv.Itoa(r.between(40, 200))+": got status 500, want 200\n    handler_test.go:"+strconv.Itoa(r.between(40, 200))+": body: {\"error\":\"internal error\",\"request_id\":\""+r.hex(8)+"\"}\nFAIL\nFAIL\t"+pkg+"\t0."+strconv.Itoa(r.between(100, 999))+"s\n"...)
			continue
		}
		b = append(b, "ok  \t"+pkg+"\t"+strconv.Itoa(r.intn(3))+"."+strconv.Itoa(r.between(100, 999))+"s\n"...)
		if !verbose && !fail && len(b) > 600 {
			break
		}
	}
	if fail {
		b = append(b, "FAIL\n"...)
	}
	return string(b)
}

func lsOutput(r *rng, paths []string, clock time.Time) string {
	b := []byte("total " + strconv.Itoa(r.between(40, 400)) + "\ndrwxr-xr-x  12 dev  staff    384 Mar  2 09:14 .\ndrwxr-xr-x   5 dev  staff    160 Feb 27 18:02 ..\n")
	for _, p := range paths {
		b = append(b, "-rw-r--r--   1 dev  staff  "...)
		b = append(b, strconv.Itoa(r.between(100, 40000))...)
		b = append(b, ' ')
		b = clock.AppendFormat(b, "Jan _2 15:04")
		b = append(b, ' ')
		b = append(b, p...)
		b = append(b, '\n')
	}
	return string(b)
}

func gitLog(r *rng, n int) string {
	var b []byte
	for i := 0; i < n; i++ {
		b = append(b, r.hex(4)[:7]+" "+title(r.pick(verbs))+" "+r.pick(adjs)+" "+r.pick(nouns)+" "+r.pick([]string{"handling", "tests", "cleanup", "in " + r.pick(packages), "retries", "docs"})+"\n"...)
	}
	return string(b)
}

func diffOutput(r *rng, paths []string, target int) string {
	b := make([]byte, 0, target+256)
	for len(b) < target {
		p := r.pick(paths)
		line := r.between(10, 400)
		b = append(b, "diff --git a/"+p+" b/"+p+"\nindex "+r.hex(4)[:7]+".."+r.hex(4)[:7]+" 100644\n--- a/"+p+"\n+++ b/"+p+"\n@@ -"+strconv.Itoa(line)+",7 +"+strconv.Itoa(line)+",9 @@\n"...)
		for i := 0; i < r.between(4, 12); i++ {
			prefix := " "
			switch r.intn(4) {
			case 0:
				prefix = "-"
			case 1:
				prefix = "+"
			}
			var s []byte
			s = r.goStmt(s, 1)
			for _, l := range strings.Split(strings.TrimSuffix(string(s), "\n"), "\n") {
				b = append(b, prefix+l+"\n"...)
			}
		}
	}
	return string(b)
}

func findOutput(r *rng, target int) string {
	b := make([]byte, 0, target+64)
	for len(b) < target {
		b = append(b, "./internal/"+r.pick(packages)+"/"+r.pick(nouns)+"_"+r.pick(verbs)+".go\n"...)
	}
	return string(b)
}

func jestOutput(r *rng, fail bool) string {
	var b []byte
	for i := 0; i < r.between(3, 8); i++ {
		b = append(b, "PASS src/"+r.pick([]string{"api", "hooks", "components"})+"/"+r.typeName()+".test.tsx\n"...)
	}
	if fail {
		b = append(b, "FAIL src/components/OrderTable.test.tsx\n  ● OrderTable › renders empty state\n\n    expect(received).toBeInTheDocument()\n\n    received value must be an HTMLElement or an SVGElement.\n    Received has value: null\n\n      42 |   render(<OrderTable orders={[]} />);\n    > 43 |   expect(screen.getByText('No orders yet')).toBeInTheDocument();\n         |                                            ^\n\nTests:       1 failed, 37 passed, 38 total\n"...)
	} else {
		b = append(b, "\nTest Suites: 8 passed, 8 total\nTests:       38 passed, 38 total\nSnapshots:   0 total\nTime:        4.21 s\nRan all test suites.\n"...)
	}
	return string(b)
}

func reportTable(r *rng, target int) string {
	b := []byte("tenant  orders  failed  p50_ms  p99_ms  retry_rate\n")
	for len(b) < target {
		b = append(b, strconv.Itoa(r.between(1, 40))+"      "+strconv.Itoa(r.intn(90000))+"   "+strconv.Itoa(r.intn(900))+"     "+strconv.Itoa(r.between(3, 80))+"      "+strconv.Itoa(r.between(80, 3000))+"    0."+strconv.Itoa(r.between(10, 99))+"\n"...)
	}
	return string(b)
}

// numbered renders file content the way Claude Code's Read tool shows it (cat -n with an arrow).
func numbered(content string, start int) string {
	var b strings.Builder
	b.Grow(len(content) + len(content)/5)
	n := start
	for len(content) > 0 {
		line := content
		if i := strings.IndexByte(content, '\n'); i >= 0 {
			line, content = content[:i], content[i+1:]
		} else {
			content = ""
		}
		s := strconv.Itoa(n)
		for i := len(s); i < 6; i++ {
			b.WriteByte(' ')
		}
		b.WriteString(s)
		b.WriteString("→")
		b.WriteString(line)
		b.WriteByte('\n')
		n++
	}
	return b.String()
}

func countLines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}
