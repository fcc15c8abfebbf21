package transcript

import (
	"fmt"
	"strconv"
	"strings"
)

// What counts as a message. A JSON document's message array is read element by element,
// and an element that is not a message is not something a tool may drop, merge or count
// as nothing: the document is not the conversation the user thinks it is (a list of
// records that each hold a conversation, a list of numbers), so reading it is refused
// with the element named, and, where the shape says where the conversations are, the
// --path that selects one.
//
// A message is an object. Anthropic and Chat Completions messages have a role. A Responses
// item is anything but an array: function calls, reasoning and the other item types carry
// no role and are read as they are, and ctx-repair's item-shape rule deals with items the
// API cannot read (a bare string, an object with neither type nor role, a number). A
// message's content, when present and not null, is a string or an array.

// checkElement returns the error for element i of the message array when it is not a
// message; m and content are what the format's reader made of it.
func checkElement(f Format, i int, v jval, m *Message, content jval) *Error {
	var why string
	switch {
	case f == Responses && !v.isObject() && !v.isArray():
		// ctx-repair's item-shape rule reads a bare string as the user message it stands
		// for and removes a scalar, and says so; it is read here as it is. A nested array
		// is a list of conversations, which no rule reads.
		return nil
	case !v.isObject():
		why = kindOf(v) + ", not a message object"
	case f != Responses && m.Role == "":
		why = `an object with no "role"`
	case content.exists() && !content.isNull() && !content.isString() && !content.isArray():
		return &Error{Offset: int64(content.at), Msg: fmt.Sprintf("message %d: content is %s, expected a string or an array of blocks", i, kindOf(content)), rule: true}
	default:
		return nil
	}
	return &Error{Offset: int64(v.at), Msg: fmt.Sprintf("element %d of the message array is not a message: %s: %s", i, why, preview(v.raw)), rule: true}
}

// conversationsHint names the --path that selects one conversation when element i of the
// array at arrPath holds one itself: an array of messages, or an object with a field
// that is one (a benchmark's log of runs, each with its trajectory).
func conversationsHint(arrPath string, i int, v jval) string {
	prefix := strconv.Itoa(i)
	if arrPath != "" {
		prefix = arrPath + "." + prefix
	}
	if looksLikeMessages(v) {
		return fmt.Sprintf("each element is a conversation of its own: select one with --path %s", prefix)
	}
	var hint string
	if !v.isObject() {
		return "" // only an object has members
	}
	v.members(func(key string, val jval) bool {
		if looksLikeMessages(val) {
			hint = fmt.Sprintf("each element holds a conversation in %q: select one with --path %s.%s", key, prefix, pathKey(key))
			return false
		}
		return true
	})
	return hint
}

// looksLikeMessages reports whether v is a non-empty array whose first element is an
// object with a role or a type.
func looksLikeMessages(v jval) bool {
	if !v.isArray() {
		return false
	}
	found := false
	v.elements(func(e jval) bool {
		var f [2]jval
		e.fields(f[:], "role", "type")
		found = f[0].isString() || f[1].isString()
		return false
	})
	return found
}

// pathKey escapes the characters that mean something in a gjson path.
func pathKey(key string) string {
	var b strings.Builder
	for _, r := range key {
		if strings.ContainsRune(`.*?|#@\!=<>%`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// kindOf names the JSON type of a value, with its article.
func kindOf(v jval) string {
	switch {
	case v.isString():
		return "a string"
	case v.isNumber():
		return "a number"
	case v.isNull():
		return "null"
	case v.isArray():
		return "an array"
	case v.isObject():
		return "an object"
	}
	return "a boolean"
}
