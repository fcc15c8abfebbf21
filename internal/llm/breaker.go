package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Breaker is a circuit breaker kept in a file, so separate runs of a tool share it: after
// Limit consecutive failures it opens, and calls are refused without touching the network
// until Cooldown has passed (then one call is let through: its success closes the
// breaker, its failure opens it again) or until it is reset.
type Breaker struct {
	Path     string
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

// BreakerFile is the state file's name in the store directory.
const BreakerFile = "summarize-breaker.json"

func (b *Breaker) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

func (b *Breaker) load() breakerState {
	var s breakerState
	if data, err := os.ReadFile(b.Path); err == nil {
		_ = json.Unmarshal(data, &s) // a damaged file counts as closed
	}
	return s
}

func (b *Breaker) save(s breakerState) error {
	if err := os.MkdirAll(filepath.Dir(b.Path), 0o700); err != nil {
		return err
	}
	data, _ := json.Marshal(s)
	tmp := b.Path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, b.Path)
}

// Allow says whether a call may go out now.
func (b *Breaker) Allow() error {
	s := b.load()
	if s.Failures < b.Limit {
		return nil
	}
	if left := s.OpenedAt.Add(b.Cooldown).Sub(b.now()); left > 0 {
		return fmt.Errorf("%w after %d consecutive failures (last: %s); retrying in %s, or reset it with --reset",
			ErrOpen, s.Failures, s.LastError, left.Round(time.Second))
	}
	return nil // half open: one call may try
}

// Record notes a call's outcome.
func (b *Breaker) Record(err error) error {
	if err == nil {
		if s := b.load(); s.Failures == 0 {
			return nil
		}
		return b.Reset()
	}
	s := b.load()
	s.Failures++
	s.LastError = err.Error()
	if s.Failures >= b.Limit {
		s.OpenedAt = b.now()
	}
	return b.save(s)
}

// Reset closes the breaker.
func (b *Breaker) Reset() error {
	err := os.Remove(b.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
