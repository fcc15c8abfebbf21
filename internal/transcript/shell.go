package transcript

import "github.com/tidwall/gjson"

// ShellWrapper returns the members of Codex's wrapper of a command's output,
// {"output":"...","metadata":{"exit_code":0,...}} in any key order: the first member of
// each name, as gjson.Get finds it, from one walk over text that stops once it has both.
// A Get of each walked past the whole output (most of the text) again. A member text does
// not have, or all of them when text is not an object, does not Exist. text is not
// validated.
func ShellWrapper(text string) (output, metadata gjson.Result) {
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
