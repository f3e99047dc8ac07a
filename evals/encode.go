package evals

import (
	"encoding/json"
	"strconv"

	"github.com/reprompt/reprompt/evals/internal/hotpath"
)

// The report's hot path: a case's runs are written by hand, without
// reflection, as encoding/json would write them (json.Marshal of the same
// values gives the same object, which ReadReport reads back): the eval's
// own cost must stay small beside runs on a scripted model.

// appendCase appends c as JSON.
func appendCase(b []byte, c *CaseResult) ([]byte, error) {
	b = append(b, `{"name":`...)
	b = hotpath.AppendString(b, c.Name)
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
	b = hotpath.AppendFloat(b, f.PassAt1)
	b = append(b, `,"pass_at_k":`...)
	b = hotpath.AppendFloat(b, f.PassAtK)
	b = append(b, `,"pass_hat_k":`...)
	b = hotpath.AppendFloat(b, f.PassHatK)
	for _, st := range [...]struct {
		key string
		s   *Stat
	}{
		{`,"steps":`, &f.Steps}, {`,"input_tokens":`, &f.InputTokens}, {`,"cache_read_tokens":`, &f.CacheRead},
		{`,"output_tokens":`, &f.OutputTokens}, {`,"cost_usd":`, &f.Cost}, {`,"latency_ms":`, &f.LatencyMS},
	} {
		if *st.s == (Stat{}) {
			continue
		}
		b = append(b, st.key...)
		b = append(b, `{"mean":`...)
		b = hotpath.AppendFloat(b, st.s.Mean)
		b = append(b, `,"p95":`...)
		b = hotpath.AppendFloat(b, st.s.P95)
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
	for _, u := range [...]struct {
		key string
		n   int
	}{
		{`,"cached_tokens":`, r.Usage.CachedTokens}, {`,"reasoning_tokens":`, r.Usage.ReasoningTokens},
		{`,"cache_write_tokens":`, r.Usage.CacheWriteTokens}, {`,"cache_write_1h_tokens":`, r.Usage.CacheWrite1hTokens},
	} {
		if u.n != 0 { // omitempty
			b = append(b, u.key...)
			b = strconv.AppendInt(b, int64(u.n), 10)
		}
	}
	b = append(b, '}')
	if r.Cost != 0 {
		b = append(b, `,"cost_usd":`...)
		b = hotpath.AppendFloat(b, r.Cost)
	}
	b = append(b, `,"latency_ms":`...)
	b = hotpath.AppendFloat(b, r.LatencyMS)
	if len(r.Output) > 0 {
		// Valid JSON as runOne sets it, not validated again: the runtime's
		// accepted answer (decoded against its schema) or a marshalled text.
		b = append(b, `,"output":`...)
		b = append(b, r.Output...)
	}
	if r.Error != "" {
		b = append(b, `,"error":`...)
		b = hotpath.AppendString(b, r.Error)
	}
	if len(r.Failures) > 0 {
		b = append(b, `,"failures":[`...)
		for i, f := range r.Failures {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"check":`...)
			b = hotpath.AppendString(b, f.Check)
			b = append(b, `,"step":`...)
			b = strconv.AppendInt(b, int64(f.Step), 10)
			b = append(b, `,"reason":`...)
			b = hotpath.AppendString(b, f.Reason)
			if f.Golden != "" {
				b = append(b, `,"golden":`...)
				b = hotpath.AppendString(b, f.Golden)
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
