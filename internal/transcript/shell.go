package transcript

import "github.com/tidwall/gjson"

// ShellWrapper returns the members of Codex's wrapper of a command's output,
// {"output":"...","metadata":{"exit_code":0,...}} in any key order: the first member of
// each name, as gjson.Get finds it, from one walk over text that stops once it has both.
// A Get of each walked past the whole output (most of the text) again. A member text does
// not have, or all of them when text is not an object, does not Exist. text is not
// validated.
//
// A valid text is walked by the package's scanner, which crosses the output a quote at a
// time and decodes it (decodeString: jsonlit.AppendDecoded); gjson's walk and decoding went
// a byte at a time, and were most of what ctx-summarize spent reading a Codex result
// besides counting it. Where text is no valid JSON, gjson's reading of it is kept
// (shellWrapperGJSON): what gjson makes of a broken object is its own.
func ShellWrapper(text string) (output, metadata gjson.Result) {
	output, metadata, valid, object := validShellWrapper(text)
	if object && !valid {
		return shellWrapperGJSON(text)
	}
	return output, metadata
}

// ValidShellWrapper is ShellWrapper of a text that is a valid JSON object (Valid): ok is
// false, and the members do not Exist, for any other text. It validates text as it
// walks it, where Valid and then ShellWrapper would read it twice.
func ValidShellWrapper(text string) (output, metadata gjson.Result, ok bool) {
	output, metadata, ok, _ = validShellWrapper(text)
	return output, metadata, ok
}

// validShellWrapper walks a valid object for ShellWrapper: valid says text is one, object
// that it starts as one (after what gjson.Parse passes over).
func validShellWrapper(text string) (output, metadata gjson.Result, valid, object bool) {
	i := 0
	for i < len(text) && text[i] <= ' ' { // what gjson.Parse passes over
		i++
	}
	if i == len(text) || text[i] != '{' {
		return // not an object
	}
	end, ok := validValue(text, i)
	if !ok || skipSpace(text, 0) != i || skipSpace(text, end) != len(text) { // (Valid)
		return output, metadata, false, true
	}
	v := jval{raw: text[i:end], at: i}
	v.members(func(key string, val jval) bool {
		switch key {
		case "output":
			if !output.Exists() {
				output = gjsonResult(val)
			}
		case "metadata":
			if !metadata.Exists() {
				metadata = gjsonResult(val)
			}
		}
		return !output.Exists() || !metadata.Exists()
	})
	return output, metadata, true, true
}

// gjsonResult is the gjson.Result a gjson walk over the document gives for v.
func gjsonResult(v jval) gjson.Result {
	if v.isString() {
		return gjson.Result{Type: gjson.String, Raw: v.raw, Str: decodeString(v.raw), Index: v.at}
	}
	r := gjson.Parse(v.raw)
	r.Index = v.at
	return r
}

// shellWrapperGJSON is ShellWrapper read by gjson, for a text that is no valid JSON.
func shellWrapperGJSON(text string) (output, metadata gjson.Result) {
	r := gjson.Parse(text)
	if !r.IsObject() {
		return
	}
	r.ForEach(func(k, v gjson.Result) bool {
		switch k.String() {
		case "output":
			if !output.Exists() {
				output = v
			}
		case "metadata":
			if !metadata.Exists() {
				metadata = v
			}
		}
		return !output.Exists() || !metadata.Exists()
	})
	return output, metadata
}
