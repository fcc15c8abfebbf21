package cli

import (
	"path/filepath"

	"github.com/alecthomas/kong"
)

// Common holds the flags every binary shares. Each tool's grammar struct
// embeds it:
//
//	type grammar struct {
//		cli.Common `embed:""`
//		Keep int `help:"..."`
//	}
//
// In --help the shared flags are listed under "Common flags:", after the
// tool's own. Environment variables are read through the getenv passed to [Main] (see
// there), not by kong from the process.
type Common struct {
	Format     string           `help:"Input format; auto detects it." enum:"auto,anthropic,openai,responses,claude-code,codex,cline" default:"auto" env:"CTX_FORMAT" placeholder:"auto|anthropic|openai|responses|claude-code|codex|cline" group:"common"`
	Path       string           `help:"gjson path of the message array inside a wrapper document; default where the format keeps it." env:"CTX_PATH" placeholder:"PATH" group:"common"`
	Sidechains bool             `help:"In a Claude Code log that holds a subagent's lines (isSidechain) beside the session's, read and change the subagent's conversation, not the session's." env:"CTX_SIDECHAINS" group:"common"`
	Tokenizer  string           `help:"Token counter; auto picks one per format; api asks Anthropic's count_tokens (needs ANTHROPIC_API_KEY)." enum:"auto,estimate,o200k,cl100k,api" default:"auto" env:"CTX_TOKENIZER" placeholder:"auto|estimate|o200k|cl100k|api" group:"common"`
	Model      string           `help:"Model name; sets the context window and reply reserve; default the one the document records." env:"CTX_MODEL" placeholder:"NAME" group:"common"`
	Window     Count            `help:"Context window in tokens (200000, 200k, 1M); overrides --model; default the model's, else 200k." env:"CTX_WINDOW" placeholder:"TOKENS" group:"common"`
	Reserve    *Count           `help:"Tokens kept free for the reply (0 is allowed); default from the model." env:"CTX_RESERVE" placeholder:"TOKENS" group:"common"`
	Overhead   Count            `help:"Tokens an agent sends that the document lacks (system prompt, tools), when it records no usage; default 0." env:"CTX_OVERHEAD" placeholder:"TOKENS" group:"common"`
	Store      string           `help:"Directory of the offload store; default the working directory's own in ~/.local/state/ctxkit/stores." env:"CTX_STORE" placeholder:"DIR" group:"common"`
	Stats      bool             `help:"Write one JSON line of run statistics to stderr." group:"common"`
	StatsFile  string           `help:"Append the statistics line to FILE instead; implies --stats." env:"CTX_STATS_FILE" placeholder:"FILE" group:"common"`
	Output     string           `help:"Write the result to FILE atomically; default stdout." short:"o" placeholder:"FILE" group:"common"`
	InPlace    bool             `help:"Rewrite each file argument in place, atomically." short:"i" group:"common"`
	Version    kong.VersionFlag `help:"Print the version and exit." group:"common"`
	Redact     bool             `help:"Redact secrets in the output document too; by default only what leaves the conversation is redacted." env:"CTX_REDACT" group:"common"`
	NoRedact   bool             `help:"Keep secrets verbatim in what leaves the conversation (the store, summaries, model backends, the proxy's log)." env:"CTX_NO_REDACT" group:"common"`
	Secrets    string           `help:"File of regular expressions, one a line, of secrets of your own to redact too." env:"CTX_SECRETS" placeholder:"FILE" group:"common"`
	Latest     bool             `help:"Read the newest agent session of the current directory (Claude Code's or Codex's) instead of a file." group:"common"`
	Agent      string           `help:"With --latest (or ctx-count --sessions), only this agent's sessions; any takes the newest of both." enum:"any,claude-code,codex" default:"any" env:"CTX_AGENT" placeholder:"any|claude-code|codex" group:"common"`
	Files      []string         `arg:"" optional:"" name:"file" help:"Input documents; \"-\" or none reads stdin."`
}

// filesArg is the name of Common's file arguments, which Tool.omit may name.
const filesArg = "file"

// CommonFlags returns c. Because it is promoted through embedding, the
// runner can reach the Common inside any grammar without [Tool.Common].
func (c *Common) CommonFlags() *Common { return c }

// StoreShownEnv names, for the tiers a tool runs over an offload store of its own (a
// temporary one: ctx-replay's, ctx-count --savings'), the directory their placeholders
// and markers name instead of that store's real path. What a tier writes then does not
// depend on where the temporary directory happened to be made: a random name written
// into every placeholder changed the tokens of each request, and decisions near a
// threshold with them, from one run to the next.
const StoreShownEnv = "CTX_STORE_SHOWN"

// ShownStore is the store directory as a tier's placeholders name it: what
// CTX_STORE_SHOWN says when a tool that runs the tier sets it (StoreShownEnv), else dir
// made absolute. The tier writes to dir either way.
func ShownStore(dir string, getenv func(string) string) (string, error) {
	if shown := getenv(StoreShownEnv); shown != "" {
		return shown, nil
	}
	return filepath.Abs(dir)
}
