package transcript

// Attachment is what a Claude Code attachment record puts into the prompt: the context
// Claude Code adds beside the messages (a file the user named, the IDE's selection, a
// hook's output, the skills and deferred tools on offer, task reminders), which it sends
// as a user message wrapped in <system-reminder> tags, though the log keeps it as a
// record of its own that carries no message. An attachment that is not sent (a hook's
// success after a tool call, permission decisions, progress) gives none.
type Attachment struct {
	Type string // the attachment's type ("skill_listing", "file", "hook_additional_context"...)
	// Before is the message the attachment comes before, an index into Messages (the
	// number of messages when it comes after the last): it is in the prompt of every
	// request whose reply comes after it.
	Before int
	Record int // its record, in Records
	// Block is what the model reads of it: a text (Body, a string or, BodyJSON, a JSON
	// value counted as written) or an image.
	Block Block
}

// silentAttachments are the attachment types Claude Code does not send to the model
// (normalizeAttachmentForAPI returns nothing for them).
var silentAttachments = map[string]bool{
	"already_read_file": true, "command_permissions": true, "edited_image_file": true,
	"hook_cancelled": true, "hook_error_during_execution": true, "hook_non_blocking_error": true,
	"hook_system_message": true, "structured_output": true, "hook_permission_decision": true,
	"autocheckpointing": true, "background_task_status": true, "todo": true, "task_progress": true,
	"dynamic_skill": true, "context_efficiency": true,
}

// The fields of an attachment object that attachmentBlock reads, in one walk.
const (
	atType = iota
	atContent
	atHookEvent
	atSnippet
	atFilename
	atPrompt
	atAddedLines
	atAddedBlocks
	atFields
)

var attachmentKeys = [atFields]string{"type", "content", "hookEvent", "snippet", "filename", "prompt", "addedLines", "addedBlocks"}

// attachmentBlock reads an attachment object of a Claude Code record: its type, and what
// of it goes into the prompt. ok is false for an attachment that puts nothing there.
//
// What is counted is the payload the prompt's text is made of, not the text itself, which
// Claude Code renders (a file with line numbers, a list with its heading): a hook's
// content, a file's text or image, an edit's snippet, the lines a delta adds, and for any
// other type its content, or the whole object as written. Types Claude Code does not send
// give nothing, as does a hook's success other than at the session's start or a prompt's
// submission, and an empty one. A type Claude Code did not know when this was written is
// counted: it is most often something it sends, and a count errs better high.
func attachmentBlock(v jval) (typ string, b Block, ok bool) {
	if !v.isObject() {
		return "", Block{}, false
	}
	var f [atFields]jval
	v.fields(f[:], attachmentKeys[:]...)
	typ = f[atType].str()
	if typ == "" || silentAttachments[typ] {
		return typ, Block{}, false
	}
	b = Block{Kind: Text, Type: "attachment", Span: v.span(), Agent: true}
	body := f[atContent]
	switch typ {
	case "hook_success":
		if ev := f[atHookEvent].str(); ev != "SessionStart" && ev != "UserPromptSubmit" {
			return typ, Block{}, false
		}
	case "hook_additional_context":
		// A list of strings, joined by new lines: one is read as the string it is.
		if body.isArray() {
			var only jval
			n := 0
			body.elements(func(e jval) bool { only, n = e, n+1; return n < 2 })
			if n == 0 {
				return typ, Block{}, false
			}
			if n == 1 {
				body = only
			}
		}
	case "file":
		var cf [2]jval
		body.fields(cf[:], "type", "file")
		var ff [3]jval
		cf[1].fields(ff[:], "content", "base64", "type")
		switch cf[0].str() {
		case "text":
			body = ff[0]
		case "image":
			if ff[1].isString() {
				b.Kind, b.Body = Image, Span{}
				b.Image = &ImageRef{MediaType: ff[2].str(), Data: ff[1].span()}
				return typ, b, true
			}
		}
	case "nested_memory":
		if c := body.get("content"); c.isString() {
			body = c
		}
	case "edited_text_file":
		body = f[atSnippet]
	case "opened_file_in_ide", "compact_file_reference", "pdf_reference":
		body = f[atFilename]
	case "queued_command":
		body = f[atPrompt]
	case "deferred_tools_delta", "agent_listing_delta":
		if f[atAddedLines].exists() {
			body = f[atAddedLines]
		}
	case "mcp_instructions_delta":
		if f[atAddedBlocks].exists() {
			body = f[atAddedBlocks]
		}
	}
	if !body.exists() || body.isNull() {
		body = v
	}
	if body.isString() && stringLen(body.raw) == 0 || body.raw == "[]" {
		return typ, Block{}, false
	}
	bodyOf(&b, body)
	return typ, b, true
}
