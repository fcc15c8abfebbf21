package count

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/sessions"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// ctx-count --sessions lists the agents' recent sessions, each measured as ctx-count
// measures one document (the same run loop, so the same figure and the same count cache):
// which session is filling up, before naming one.

// SessionsSchemaVersion is the schema_version of a listing line (schema/sessions.json).
const SessionsSchemaVersion = 1

// SessionLine is one session of the listing. Its JSON form is schema/sessions.json.
type SessionLine struct {
	File  string `json:"file"`
	Agent string `json:"agent"`
	// Project is the directory the session ran in: as Codex records it, or Claude Code's
	// folder name (the path mangled, which cannot be turned back).
	Project  string `json:"project"`
	Modified string `json:"modified"` // the file's modification time, RFC 3339, UTC
	// LastActive is when the session last wrote (its last record's timestamp, else
	// Modified): a copied or synced folder gives every file a new modification time.
	LastActive  string  `json:"last_active"`
	Bytes       int64   `json:"bytes"`
	Tokens      int     `json:"tokens"`
	Window      int     `json:"effective_window"`
	Utilization float64 `json:"utilization"`
	// Requests and PromptTokens are the main log's (SessionFigures); Subagents how many
	// logs of subagents the session has, and the WithSubagents figures the session's with
	// them (the main log's when it has none).
	Requests                  int `json:"requests"`
	PromptTokens              int `json:"prompt_tokens"`
	Subagents                 int `json:"subagents"`
	RequestsWithSubagents     int `json:"requests_with_subagents"`
	PromptTokensWithSubagents int `json:"prompt_tokens_with_subagents"`
	// SchemaVersion comes last, as in the report, so lines are matched by how they start.
	SchemaVersion int `json:"schema_version"`
}

// listSessions writes the listing: newest first, at most --limit, a table on a terminal,
// else JSON lines. A session that cannot be measured gets an error line on stderr and the
// others are listed (exit 3 or 4 at the end), as several files are reported.
func listSessions(ctx *cli.Context, f *Flags) error {
	switch {
	case len(f.Files) > 0 || f.Latest:
		return cli.Usagef("--sessions lists the sessions it finds; drop the file arguments and --latest")
	case f.Pass || f.Vs != "" || f.Savings || f.Text || f.Follow:
		return cli.Usagef("--sessions lists sessions; it does not take --pass, --vs, --savings, --text or --follow")
	case f.Limit < 0:
		return cli.Usagef("--limit must be 0 (no bound) or more, got %d", f.Limit)
	}
	found, err := ctx.FindSessions(f.AllProjects, f.Limit)
	if err != nil {
		return err
	}
	if len(found) == 0 {
		// Exit 4, as --latest finding none: nothing was read (a runtime failure, like a
		// missing file), and no check the user asked for fired (1). An empty listing that
		// exits 0 left a user with sessions elsewhere no clue where we had looked.
		todo := "--all-projects lists every project's"
		if f.AllProjects {
			todo = ""
		}
		return ctx.NoSessions(f.AllProjects, todo)
	}
	cache := openListCache(ctx)
	f.Agent = "any" // (--agent did its choosing: the run below reads the files found)
	byPath := map[string]sessions.Session{}
	measured := map[string]listFigures{}
	for _, s := range found {
		if v, ok := cache.get(s); ok {
			measured[s.Path] = v
			continue
		}
		f.Files = append(f.Files, s.Path)
		byPath[s.Path] = s
	}
	if len(f.Files) > 0 {
		var notes *Notes
		err = ctx.Run(cli.Filter{
			Reports: true, Counted: true, TallyOnly: true, KeepGoing: true,
			// (the usage figures of every request, for the session's figures)
			Record: func(seq int, rec *transcript.Transcript, c tokens.Counter) error {
				if seq == 0 || notes == nil {
					notes = &Notes{}
				}
				notes.Add(rec, c)
				return nil
			},
			Plan: func(d *cli.Doc) (*cli.Plan, error) {
				r, err := report(d, notes, false)
				notes = nil
				if err != nil {
					return nil, err
				}
				v := listFigures{Tokens: r.Tokens, Window: r.EffectiveWindow, Utilization: r.Utilization}
				if s := r.Session; s != nil {
					v.Requests, v.PromptTokens = s.Requests, s.PromptTokens
					v.RequestsWith, v.PromptWith, v.Subagents = s.Requests, s.PromptTokens, len(s.Subagents)
					if ws := s.WithSubagents; ws != nil {
						v.RequestsWith, v.PromptWith = ws.Requests, ws.PromptTokens
					}
				}
				measured[d.Name] = v
				cache.put(byPath[d.Name], v)
				return &cli.Plan{}, nil
			},
		})
	}
	cache.save(found)
	var lines []SessionLine
	for _, s := range found {
		v, ok := measured[s.Path]
		if !ok {
			continue // its error is on stderr
		}
		lines = append(lines, SessionLine{
			File: s.Path, Agent: s.Agent, Project: s.Dir, Modified: s.Mod.UTC().Format(time.RFC3339),
			LastActive: s.Last.UTC().Format(time.RFC3339), Bytes: s.Size, Tokens: v.Tokens, Window: v.Window, Utilization: v.Utilization,
			Requests: v.Requests, PromptTokens: v.PromptTokens, Subagents: v.Subagents,
			RequestsWithSubagents: v.RequestsWith, PromptTokensWithSubagents: v.PromptWith,
			SchemaVersion: SessionsSchemaVersion,
		})
	}
	// What was measured is listed even when some sessions failed (their error lines are
	// on stderr already and err carries the exit status).
	var out bytes.Buffer
	if (ctx.StdoutTTY || f.Picture) && !f.JSON && f.Output == "" {
		renderSessions(&out, lines, ctx.Now(), ctx.Columns)
	} else if werr := cli.JSONLines(&out, lines...); werr != nil {
		return werr
	}
	if werr := ctx.WriteReport(out.Bytes()); werr != nil {
		return werr
	}
	return err
}

// renderSessions writes the listing as a table fitted to width (0: unknown, 80): the file
// last, cut from the left (its uuid, the part that tells sessions apart, stays), its
// control characters escaped.
func renderSessions(w io.Writer, lines []SessionLine, now time.Time, width int) {
	if width <= 0 {
		width = 80
	}
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	// SENT, the main log's prompts summed, and +SUB, the session's with its subagents'
	// (how many; "-" without), where the terminal leaves the file room for its uuid.
	sent := width >= 100
	if sent {
		fmt.Fprintln(tw, "ACTIVE\tAGENT\tSIZE\tTOKENS\tUSED\tSENT\t+SUB\tFILE")
	} else {
		fmt.Fprintln(tw, "ACTIVE\tAGENT\tSIZE\tTOKENS\tUSED\tFILE")
	}
	for _, l := range lines {
		last, _ := time.Parse(time.RFC3339, l.LastActive)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.0f%%\t", ago(now, last), human.Safe(l.Agent), human.Size(l.Bytes),
			human.Thousands(l.Tokens), 100*l.Utilization)
		if sent {
			with := "-"
			if l.Subagents > 0 {
				with = fmt.Sprintf("%s/%d", human.Short(l.PromptTokensWithSubagents), l.Subagents)
			}
			fmt.Fprintf(tw, "%s\t%s\t", human.Short(l.PromptTokens), with)
		}
		fmt.Fprintf(tw, "\x00%s\n", human.Safe(l.File))
	}
	tw.Flush()
	for _, row := range strings.SplitAfter(b.String(), "\n") {
		if row == "" {
			continue
		}
		row = strings.TrimSuffix(row, "\n")
		if i := strings.IndexByte(row, 0); i >= 0 {
			head, file := row[:i], row[i+1:]
			if room := width - len(head); room < len(file) {
				file = clipLeft(file, max(room, 13)) // (at least 12 characters of the path)
			}
			row = head + file
		}
		fmt.Fprintln(w, row)
	}
}

// ago says how long before now t was, in the largest unit that fits.
func ago(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return t.Local().Format("2006-01-02")
}
