package evals

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// The report's hot path: a case's runs are written by hand, without
// reflection, as encoding/json would write them (json.Marshal of the same
// values gives the same object, which ReadReport reads back): the eval's
// own cost must stay small beside runs on a scripted model.

// appendCase appends c as JSON.
func appendCase(b []byte, c *CaseResult) ([]byte, error) {
	b = append(b, `{"name":`...)
	b = appendString(b, c.Name)
	fig, err := json.Marshal(c.Figures)
	if err != nil {
		return b, err
	}
	b = append(b, `,"figures":`...)
	b = append(b, fig...)
	if len(c.Runs) > 0 {
		b = append(b, `,"runs":[`...)
		for i := range c.Runs {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendRun(b, &c.Runs[i]); err != nil {
				return b, err
			}
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

func appendRun(b []byte, r *RunResult) ([]byte, error) {
	b = append(b, `{"run":`...)
	b = strconv.AppendInt(b, int64(r.Run), 10)
	b = append(b, `,"pass":`...)
	b = strconv.AppendBool(b, r.Pass)
	b = append(b, `,"steps":`...)
	b = strconv.AppendInt(b, int64(r.Steps), 10)
	b = append(b, `,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(r.Usage.InputTokens), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(r.Usage.OutputTokens), 10)
	if r.Usage.CachedTokens != 0 {
		b = append(b, `,"cached_tokens":`...)
		b = strconv.AppendInt(b, int64(r.Usage.CachedTokens), 10)
	}
	if r.Usage.ReasoningTokens != 0 {
		b = append(b, `,"reasoning_tokens":`...)
		b = strconv.AppendInt(b, int64(r.Usage.ReasoningTokens), 10)
	}
	b = append(b, `},"cost_usd":`...)
	b = appendFloat(b, r.Cost)
	b = append(b, `,"latency_ms":`...)
	b = appendFloat(b, r.LatencyMS)
	if len(r.Output) > 0 {
		b = append(b, `,"output":`...)
		if json.Valid(r.Output) {
			b = append(b, r.Output...)
		} else {
			b = appendString(b, string(r.Output)) // never written invalid
		}
	}
	if r.Error != "" {
		b = append(b, `,"error":`...)
		b = appendString(b, r.Error)
	}
	if len(r.Failures) > 0 {
		b = append(b, `,"failures":[`...)
		for i, f := range r.Failures {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"check":`...)
			b = appendString(b, f.Check)
			b = append(b, `,"step":`...)
			b = strconv.AppendInt(b, int64(f.Step), 10)
			b = append(b, `,"reason":`...)
			b = appendString(b, f.Reason)
			if f.Golden != "" {
				b = append(b, `,"golden":`...)
				b = appendString(b, f.Golden)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(r.Grades) > 0 {
		g, err := json.Marshal(r.Grades)
		if err != nil {
			return b, err
		}
		b = append(b, `,"grades":`...)
		b = append(b, g...)
	}
	return append(b, '}'), nil
}

// appendFloat appends f as encoding/json writes a float64 (NaN and the
// infinities, which JSON cannot hold, as 0).
func appendFloat(b []byte, f float64) []byte {
	if f != f || f > 1e308 || f < -1e308 {
		return append(b, '0')
	}
	fmtByte := byte('f')
	if abs := max(f, -f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		fmtByte = 'e'
	}
	return strconv.AppendFloat(b, f, fmtByte, -1, 64)
}

const hex = "0123456789abcdef"

// appendString appends s as a JSON string: quotes, backslashes and control
// characters escaped, invalid UTF-8 replaced by U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
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
