package transcript

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The readers walk a document that has already been validated (Valid on the whole
// document or on each record line), so the scanner below trusts the syntax: it finds where
// values end, reads the members of an object in one walk, and leaves strings encoded
// (a block needs its text's span, not the text). A reader asks an object for all the
// fields it wants at once (fields), instead of looking each up from the start again.
//
// Where a document breaks the rules the way gjson allows — a field of the wrong type — the
// accessors answer as gjson's did (str, boolean and integer convert as gjson.Result's
// String, Bool and Int do), so the messages read are the ones the gjson-based readers
// read; a differential test holds the two to that.
//
// A key given twice in an object is the exception: gjson reads the first, every JSON
// decoder a provider's API uses reads the last, so a tool would judge and edit a different
// conversation than the provider sees, and a splicing writer cannot honour the last
// without rewriting the object. fields, through which every key the readers use is read,
// refuses a duplicate of a key it was asked for (dupKey); keys ctxkit does not read may
// repeat, as they do no harm here. The check costs nothing but walking an object to its
// end, which the readers mostly did anyway.

// jval is one JSON value of the document: its text and the document offset of its first
// byte. The zero jval stands for a missing value.
type jval struct {
	raw string
	at  int
}

func (v jval) exists() bool   { return v.raw != "" }
func (v jval) span() Span     { return Span{v.at, v.at + len(v.raw)} }
func (v jval) isObject() bool { return v.raw != "" && v.raw[0] == '{' }
func (v jval) isArray() bool  { return v.raw != "" && v.raw[0] == '[' }
func (v jval) isString() bool { return v.raw != "" && v.raw[0] == '"' }
func (v jval) isNull() bool   { return v.raw != "" && v.raw[0] == 'n' }
func (v jval) isNumber() bool {
	return v.raw != "" && (v.raw[0] == '-' || ('0' <= v.raw[0] && v.raw[0] <= '9'))
}

// str is the value as gjson's Result.String gives it: a string decoded, a number as
// written (or reformatted when it has a fraction or exponent), true and false as words,
// an object or array as its JSON, null and a missing value as "".
// text is the value when it is a JSON string, else "": for ids, where a number or an
// object is no id at all.
func (v jval) text() string {
	if v.raw == "" || v.raw[0] != '"' {
		return ""
	}
	return decodeString(v.raw)
}

func (v jval) str() string {
	if v.raw == "" {
		return ""
	}
	switch v.raw[0] {
	case '"':
		return decodeString(v.raw)
	case 'n':
		return ""
	case 't':
		return "true"
	case 'f':
		return "false"
	case '{', '[':
		return v.raw
	}
	for i := 0; i < len(v.raw); i++ {
		if c := v.raw[i]; (c < '0' || c > '9') && !(i == 0 && c == '-') {
			return strconv.FormatFloat(v.num(), 'f', -1, 64)
		}
	}
	return v.raw
}

// boolean is gjson's Result.Bool: true, a string that reads as true, a non-zero number.
func (v jval) boolean() bool {
	switch {
	case v.raw == "":
		return false
	case v.raw[0] == 't':
		return true
	case v.isString():
		b, _ := strconv.ParseBool(strings.ToLower(decodeString(v.raw)))
		return b
	case v.isNumber():
		return v.num() != 0
	}
	return false
}

// integer is gjson's Result.Int.
func (v jval) integer() int64 {
	switch {
	case v.raw == "":
		return 0
	case v.raw[0] == 't':
		return 1
	case v.isString():
		s := decodeString(v.raw)
		if n, ok := parseInt(s); ok {
			return n
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return floatToInt(f)
		}
		return 0
	case v.isNumber():
		if f := v.num(); f >= -9007199254740991 && f <= 9007199254740991 {
			return int64(f)
		}
		if n, ok := parseInt(v.raw); ok {
			return n
		}
		return floatToInt(v.num())
	}
	return 0
}

// parseInt reads an optional minus and decimal digits, saturating on overflow.
func parseInt(s string) (int64, bool) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	var n uint64
	over := false
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		next := n*10 + uint64(s[i]-'0')
		if next < n { // gjson's overflow test, kept as it is so the two agree
			over = true
		}
		n = next
	}
	switch {
	case neg && (over || n > 1<<63):
		return math.MinInt64, true
	case neg:
		return -int64(n), true
	case over || n > math.MaxInt64:
		return math.MaxInt64, true
	}
	return int64(n), true
}

func (v jval) num() float64 {
	f, _ := strconv.ParseFloat(v.raw, 64)
	return f
}

func floatToInt(f float64) int64 {
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f < math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// fields finds, in one walk over the object v, the member named by each of keys: out[i]
// gets the value of keys[i], or stays missing. A v that is not an object has no fields.
// A key of keys that the object gives twice panics with a dupKey, which Parse, Stream and
// Sniff turn into an *Error.
func (v jval) fields(out []jval, keys ...string) {
	for i := range out {
		out[i] = jval{}
	}
	if !v.isObject() {
		return
	}
	v.members(func(key string, val jval) bool {
		for i, k := range keys {
			if k == key {
				if out[i].exists() {
					panic(dupKey{key: key, at: val.at})
				}
				out[i] = val
				break
			}
		}
		return true
	})
}

// get is fields for one key, where a duplicate does not matter or another fields call
// over the same object checks it: the walk stops at the first member of the name.
func (v jval) get(key string) jval {
	var found jval
	if v.isObject() {
		v.members(func(k string, val jval) bool {
			if k == key {
				found = val
				return false
			}
			return true
		})
	}
	return found
}

// dupKey is a key given twice in an object the readers read (see fields): at is the
// document offset of the second value.
type dupKey struct {
	key string
	at  int
}

// catchDup, deferred (directly: recover works only there) by the package's entry points,
// turns a dupKey panic into the refusal err returns; any other panic goes on.
func catchDup(err *error) {
	r := recover()
	if r == nil {
		return
	}
	d, ok := r.(dupKey)
	if !ok {
		panic(r)
	}
	*err = &Error{Offset: int64(d.at), Msg: fmt.Sprintf("key %q is given twice in one object: ctxkit would read the first, the provider's JSON decoder the last", d.key),
		Hint: "remove one of the two", rule: true}
}

// members calls fn with the name (decoded) and value of each member of the object v, in
// order, until fn returns false.
func (v jval) members(fn func(key string, val jval) bool) {
	s := v.raw
	i := skipSpace(s, 1)
	for i < len(s) && s[i] == '"' {
		end := stringEnd(s, i)
		key := s[i+1 : end-1]
		if strings.IndexByte(key, '\\') >= 0 {
			key = decodeString(s[i:end])
		}
		i = skipSpace(s, end)
		i = skipSpace(s, i+1) // the colon
		vend := valueEnd(s, i)
		if !fn(key, jval{s[i:vend], v.at + i}) {
			return
		}
		i = skipSpace(s, vend)
		if i < len(s) && s[i] == ',' {
			i = skipSpace(s, i+1)
		}
	}
}

// elements calls fn with each element of the array v, in order, until fn returns false.
func (v jval) elements(fn func(val jval) bool) {
	s := v.raw
	i := skipSpace(s, 1)
	for i < len(s) && s[i] != ']' {
		end := valueEnd(s, i)
		if !fn(jval{s[i:end], v.at + i}) {
			return
		}
		i = skipSpace(s, end)
		if i < len(s) && s[i] == ',' {
			i = skipSpace(s, i+1)
		}
	}
}

// each is gjson's Result.ForEach as the readers used it: the elements of an array, the
// member values of an object, or, for any other value that exists, the value itself.
func (v jval) each(fn func(val jval) bool) {
	switch {
	case !v.exists():
	case v.isArray():
		v.elements(fn)
	case v.isObject():
		v.members(func(_ string, val jval) bool { return fn(val) })
	default:
		fn(v)
	}
}

func skipSpace(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// valueEnd is the offset just past the value that starts at s[i].
func valueEnd(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '"':
		return stringEnd(s, i)
	case '{', '[':
		return containerEnd(s, i)
	}
	j := i + 1
	for j < len(s) {
		switch s[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}

// stringEnd is the offset just past the string literal that starts at s[i]. Long texts are
// crossed a quote at a time (IndexByte), not a byte at a time.
func stringEnd(s string, i int) int {
	j := i + 1
	for {
		k := strings.IndexByte(s[j:], '"')
		if k < 0 {
			return len(s)
		}
		j += k
		// The quote ends the string unless an odd number of backslashes escapes it.
		n := 0
		for m := j - 1; m > i && s[m] == '\\'; m-- {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		j++
	}
}

// containerEnd is the offset just past the object or array that starts at s[i].
func containerEnd(s string, i int) int {
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '"':
			j = stringEnd(s, j) - 1
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return j + 1
			}
		}
	}
	return len(s)
}
