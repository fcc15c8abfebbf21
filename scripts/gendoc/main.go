// Command gendoc writes a synthetic conversation document for tests and benchmarks.
//
//	go run ./scripts/gendoc -format claude-code -size 10MB -seed 1 -images > session.jsonl
//
// Sizes take a KB or MB suffix (1 KB = 1024 bytes); the output is deterministic for a given
// set of flags. See internal/testgen for what the documents contain.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/internal/testgen"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "gendoc: error: %v\n", err)
		os.Exit(2)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("gendoc", flag.ContinueOnError)
	format := fs.String("format", "claude-code", "document format: "+strings.Join(testgen.Formats, ", "))
	size := fs.String("size", "1MB", "approximate size, with an optional KB or MB suffix")
	seed := fs.Int64("seed", 1, "random seed; the same flags give the same bytes")
	images := fs.Bool("images", false, "include small base64 PNG images")
	pinned := fs.Bool("pinned", false, "include the pinned context clients send as messages (AGENTS.md, environment, developer rules; Claude Code's reminders)")
	compactions := fs.Int("compactions", 0, "compact the history `N` times (claude-code, codex)")
	preserve := fs.Bool("preserve", false, "Claude Code compactions keep the newest turn (compactMetadata.preservedSegment)")
	version := fs.String("version", "", "write as a given client version writes, with faithful usage: 2.1 (claude-code), 0.114 (codex)")
	planted := fs.Bool("planted", false, "write the planted secrets and look-alikes internal/redact is measured on (JSON lines) instead of a document")
	outFile := fs.String("o", "", "write to `FILE` instead of stdout")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	n, err := parseSize(*size)
	if err != nil {
		return err
	}
	opts := testgen.Options{Format: *format, Size: n, Seed: *seed, Images: *images, Pinned: *pinned, Compactions: *compactions, Preserve: *preserve, Version: *version}
	generate := func(w io.Writer) error { return testgen.Generate(w, opts) }
	if *planted {
		generate = func(w io.Writer) error { return testgen.WriteSecrets(w, testgen.Secrets(*seed)) }
	}
	if *outFile == "" {
		return generate(stdout)
	}
	// Write beside the target and rename, so an interrupted run leaves no half file.
	tmp, err := os.CreateTemp(filepath.Dir(*outFile), ".gendoc-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriterSize(tmp, 1<<20)
	if err := generate(w); err != nil {
		tmp.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %q: %w", *outFile, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %q: %w", *outFile, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), *outFile)
}

// parseSize reads 150KB, 10MB, 2M, 512k or a plain byte count.
func parseSize(s string) (int, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := 1
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("invalid size %q (want e.g. 150KB or 10MB)", s)
	}
	return int(f * float64(mult)), nil
}
