// Package hotpath is an eval's own work beside its runs, kept small and
// in bounded memory: the scheduler that hands out the runs and gathers
// them case by case in dataset order (Sched), JSON values written by hand,
// byte for byte as encoding/json writes them but without its reflection
// and allocations (see evals/encode.go), and the measures of every run
// kept as a mean and a 95th percentile in memory that does not grow with
// the runs (Top). Only package evals imports it.
package hotpath

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// AppendFloat appends f as encoding/json writes a float64 (NaN and the
// infinities, which JSON cannot hold, as 0).
func AppendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, '0')
	}
	if i := int64(f); float64(i) == f && i > -1e15 && i < 1e15 && (i != 0 || !math.Signbit(f)) {
		return strconv.AppendInt(b, i, 10) // a whole number (steps, tokens): as 'f' writes it, faster
	}
	fmtByte := byte('f')
	if abs := max(f, -f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		fmtByte = 'e'
	}
	b = strconv.AppendFloat(b, f, fmtByte, -1, 64)
	if fmtByte == 'e' { // e-07 as e-7, as encoding/json writes it
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hex = "0123456789abcdef"

// safe reports the ASCII bytes a JSON string holds as they are: not a
// quote, a backslash or a control character.
var safe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// AppendString appends s as a JSON string: quotes, backslashes and control
// characters escaped, invalid UTF-8 replaced by U+FFFD.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if safe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\t':
				b = append(b, '\\', 't')
			case '\r':
				b = append(b, '\\', 'r')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
