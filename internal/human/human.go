// Package human reads and writes numbers and text for a person: a number with a unit as a
// person writes it (ParseScaled), grouped digits, and text clipped to fit a line. It is
// pure: no I/O.
package human

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Thousands writes n with grouping commas: 1234567 -> 1,234,567.
func Thousands(n int) string {
	if n < 0 {
		return "-" + Thousands(-n)
	}
	s := strconv.Itoa(n)
	var b strings.Builder
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Clip shortens s to at most n bytes, and an ellipsis, without splitting a UTF-8 sequence.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Label is s on one line (runs of white space made one space) and at most n characters,
// the last an ellipsis when it was cut: a table cell or a placeholder's name of a call.
func Label(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, k := 0, 0
	for i = range s {
		if k == n-1 {
			break
		}
		k++
	}
	return s[:i] + "…"
}

// OneLine joins the words of s with single spaces.
func OneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")
}

// Size writes a number of bytes in the largest decimal unit below it, with one decimal
// under 10 of that unit: 950 B, 1.2 KB, 34 MB.
func Size(n int64) string {
	units := []string{"B", "KB", "MB", "GB", "TB"}
	f, u := float64(n), 0
	for f >= 1000 && u < len(units)-1 {
		f /= 1000
		u++
	}
	if u == 0 || f >= 10 {
		return strconv.FormatFloat(f, 'f', 0, 64) + " " + units[u]
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + " " + units[u]
}

// Short writes a count in the largest decimal unit below it, with one decimal under 10 of
// that unit: 950, 1.2K, 34K, 2.9M.
func Short(n int) string {
	units := []string{"", "K", "M", "G", "T"}
	f, u := float64(n), 0
	for (f >= 1000 || f <= -1000) && u < len(units)-1 {
		f /= 1000
		u++
	}
	if u == 0 || f >= 10 || f <= -10 {
		return strconv.FormatFloat(f, 'f', 0, 64) + units[u]
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + units[u]
}
