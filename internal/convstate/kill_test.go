package convstate

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// killedEnv names the state directory TestKilledWriter's child writes to.
const killedEnv = "CONVSTATE_KILLED_WRITER"

// TestKilledWriter: a proxy killed (SIGKILL) at any moment of its writes, appending records
// or writing the file whole again, leaves a state, and a request as sent, that a new
// reading finds whole: one of those it wrote, its request the one the state's messages
// make. The child is this test binary, writing turns of a conversation until it is
// killed.
func TestKilledWriter(t *testing.T) {
	if dir := os.Getenv(killedEnv); dir != "" {
		d := reopen(t, dir)
		for from := 0; ; from += 7 {
			sendTurns(t, d, from%60, 7) // (every 60 turns the conversation starts again: written whole)
		}
	}
	if testing.Short() {
		t.Skip("starts and kills writers for a second")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	for i := 0; i < 8; i++ {
		dir := t.TempDir()
		cmd := exec.Command(exe, "-test.run=^TestKilledWriter$")
		cmd.Env = append(os.Environ(), killedEnv+"="+dir)
		if err := cmd.Start(); err != nil {
			t.Skip(err)
		}
		// Until the first state is there, then a while longer, different each time.
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(dir, SentDir)); err == nil {
				break
			}
		}
		time.Sleep(time.Duration(20+17*i) * time.Millisecond)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()

		got, err := reopen(t, dir).Get("k")
		if err != nil || got == nil || len(got.Sent) == 0 || len(got.Sent)%2 != 0 {
			t.Fatalf("kill %d: read %+v, %v", i, got, err)
		}
		for j, m := range got.Sent {
			if want := fmt.Sprintf(`"turn %d `, j/2); j%2 == 0 && !strings.Contains(m, want) || origRaw(got, j) != m {
				t.Fatalf("kill %d: message %d is %.40s", i, j, m)
			}
		}
		doc, err := SentDocument(filepath.Join(dir, fileName("k")))
		if err != nil || !bytes.Equal(doc, request(got)) {
			t.Fatalf("kill %d: the request as sent is not the state's: %.80q, %v", i, doc, err)
		}
		t.Logf("kill %d: %d messages", i, len(got.Sent))
	}
}
