package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/ctxkit/ctxkit/internal/safefile"
)

// Breaker is a circuit breaker kept in a file, so separate runs of a tool share it: after
// Limit consecutive failures it opens, and calls are refused without touching the network
// until Cooldown has passed (then one call is let through: its success closes the
// breaker, its failure opens it again) or until it is reset.
type Breaker struct {
	Path     string // "" keeps no state: every call is allowed
	Limit    int
	Cooldown time.Duration
	Now      func() time.Time
}

// breakerState is the file's content.
type breakerState struct {
	Failures  int       `json:"failures"`
	OpenedAt  time.Time `json:"opened_at,omitzero"`
	LastError string    `json:"last_error,omitempty"`
}

// ErrOpen is returned while the breaker refuses calls.
var ErrOpen = errors.New("circuit breaker open")

// BreakerFile is the state file's name in a store directory given explicitly (--store).
const BreakerFile = "summarize-breaker.json"

// BreakerPath is the state file of the backend at baseURL in the user's state directory:
// one file per backend, named by a hash of its URL (so a URL, which may carry a token,
// never becomes a file name), since one backend failing says nothing of another.
func BreakerPath(stateDir, backend, baseURL string) string {
	sum := sha256.Sum256([]byte(backend + " " + baseURL))
	return filepath.Join(stateDir, "breaker-"+hex.EncodeToString(sum[:8])+".json")
}

func (b *Breaker) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// load reads the state. A damaged file, and one that is a link or someone else's (which
// save refuses to replace, saying so), count as closed.
func (b *Breaker) load() breakerState {
	var s breakerState
	if f, err := safefile.Open(b.Path); err == nil {
		data, err := io.ReadAll(io.LimitReader(f, 1<<20))
		f.Close()
		if err == nil {
			_ = json.Unmarshal(data, &s)
		}
	}
	return s
}

// save replaces the state file atomically, never through a link (safefile): the store
// directory, where the file lived before, is a relative path a cloned repository can
// plant. The directory is made 0700.
func (b *Breaker) save(s breakerState) error {
	if err := safefile.MkdirAll(filepath.Dir(b.Path)); err != nil {
		return err
	}
	data, _ := json.Marshal(s)
	return safefile.WriteFile(b.Path, append(data, '\n'))
}

// Allow says whether a call may go out now. A state file or folder that is a link or
// another user's is an error (safefile.ErrUnsafe) before any call: its state could not be
// kept, and it was likely planted.
func (b *Breaker) Allow() error {
	if b.Path == "" {
		return nil
	}
	if err := safefile.CheckTarget(b.Path); err != nil {
		return err
	}
	if err := safefile.CheckDir(filepath.Dir(b.Path)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	s := b.load()
	if s.Failures < b.Limit {
		return nil
	}
	if left := s.OpenedAt.Add(b.Cooldown).Sub(b.now()); left > 0 {
		return fmt.Errorf("%w after %d consecutive failures (last: %s); retrying in %s, or reset it with --reset",
			ErrOpen, s.Failures, Redact(s.LastError), left.Round(time.Second))
	}
	return nil // half open: one call may try
}

// Record notes a call's outcome. A connection refused on this machine is not counted:
// the breaker spares a failing provider, and a local server that is not running costs
// nothing to ask; counting it would keep the backend shut for the cooldown after the user
// has started the server.
func (b *Breaker) Record(err error) error {
	var re *RefusedError
	if b.Path == "" || errors.As(err, &re) && re.Local {
		return nil
	}
	if err == nil {
		if s := b.load(); s.Failures == 0 {
			return nil
		}
		return b.Reset()
	}
	s := b.load()
	s.Failures++
	s.LastError = Redact(err.Error()) // a key the server echoed must not rest in a file
	if s.Failures >= b.Limit {
		s.OpenedAt = b.now()
	}
	return b.save(s)
}

// Reset closes the breaker. A link at the path is removed, not followed.
func (b *Breaker) Reset() error {
	if b.Path == "" {
		return nil
	}
	err := os.Remove(b.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
