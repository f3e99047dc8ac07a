package evals

import (
	"encoding/json"
	"math"
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
	b = append(b, `,"figures":`...)
	b = appendFigures(b, &c.Figures)
	var err error
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

func appendFigures(b []byte, f *Figures) []byte {
	b = append(b, `{"runs":`...)
	b = strconv.AppendInt(b, int64(f.Runs), 10)
	b = append(b, `,"passed":`...)
	b = strconv.AppendInt(b, int64(f.Passed), 10)
	b = append(b, `,"pass_at_1":`...)
	b = appendFloat(b, f.PassAt1)
	b = append(b, `,"pass_at_k":`...)
	b = appendFloat(b, f.PassAtK)
	b = append(b, `,"pass_hat_k":`...)
	b = appendFloat(b, f.PassHatK)
	for _, st := range [...]struct {
		key string
		s   *Stat
	}{
		{`,"steps":`, &f.Steps}, {`,"input_tokens":`, &f.InputTokens}, {`,"cache_read_tokens":`, &f.CacheRead},
		{`,"output_tokens":`, &f.OutputTokens}, {`,"cost_usd":`, &f.Cost}, {`,"latency_ms":`, &f.LatencyMS},
	} {
		b = append(b, st.key...)
		b = append(b, `{"mean":`...)
		b = appendFloat(b, st.s.Mean)
		b = append(b, `,"p95":`...)
		b = appendFloat(b, st.s.P95)
		b = append(b, '}')
	}
	return append(b, '}')
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

// appendString appends s as a JSON string: quotes, backslashes and control
// characters escaped, invalid UTF-8 replaced by U+FFFD.
func appendString(b []byte, s string) []byte {
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
