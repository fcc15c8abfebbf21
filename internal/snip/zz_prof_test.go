package snip

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func BenchmarkZZFile(b *testing.B) {
	for _, format := range []string{"claude-code", "codex", "anthropic", "openai", "responses"} {
		b.Run(format, func(b *testing.B) {
			m, _ := filepath.Glob("/tmp/ctxkit-bench/" + format + "-10MB-*")
			if len(m) == 0 {
				b.Skip()
			}
			st := "/dev/shm/snipprof"
			for b.Loop() {
				os.RemoveAll(st)
				var out, errb bytes.Buffer
				env := map[string]string{"CTX_STORE": st, "CTX_CACHE_DIR": "off"}
				if code := Main([]string{m[0]}, strings.NewReader(""), &out, &errb, func(k string) string { return env[k] }); code != 0 {
					b.Fatalf("exit %d: %s", code, errb.String())
				}
			}
			os.RemoveAll(st)
		})
	}
}
