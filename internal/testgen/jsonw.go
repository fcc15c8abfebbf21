package testgen

import (
	"bufio"
	"strconv"
)

// appendStr appends s as a JSON string literal the way JSON.stringify and serde_json write
// it: only '"', '\\' and control characters are escaped. encoding/json would also turn '<',
// '>' and '&' into \u003c..., which Claude Code and Codex files never contain and which
// source code is full of; the tests decode every string back with encoding/json.
func appendStr(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '\n':
			b = append(b, '\\', 'n')
		case '\t':
			b = append(b, '\\', 't')
		case '\r':
			b = append(b, '\\', 'r')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		default:
			const hexd = "0123456789abcdef"
			b = append(b, '\\', 'u', '0', '0', hexd[c>>4], hexd[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendKey appends `"k":` (keys are plain identifiers, never escaped).
func appendKey(b []byte, k string) []byte {
	b = append(b, '"')
	b = append(b, k...)
	return append(b, '"', ':')
}

// appendKV appends `"k":"v"` with v escaped, preceded by a comma unless first.
func appendKV(b []byte, k, v string) []byte {
	b = appendKey(b, k)
	return appendStr(b, v)
}

func appendKI(b []byte, k string, v int) []byte {
	b = appendKey(b, k)
	return strconv.AppendInt(b, int64(v), 10)
}

func appendKB(b []byte, k string, v bool) []byte {
	b = appendKey(b, k)
	return strconv.AppendBool(b, v)
}

func appendKF(b []byte, k string, v float64) []byte {
	b = appendKey(b, k)
	return strconv.AppendFloat(b, v, 'f', -1, 64)
}

// out counts what has been written, which is how the generator steers toward Options.Size.
type out struct {
	w   *bufio.Writer
	n   int
	err error
}

func (o *out) write(b []byte) {
	if o.err != nil {
		return
	}
	m, err := o.w.Write(b)
	o.n += m
	o.err = err
}
