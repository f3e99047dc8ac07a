package runtime_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// recorder is a slog.Handler that keeps every record, its attributes
// flattened into a map ("usage.input" for a group).
type recorder struct {
	mu      sync.Mutex
	records []record
}

type record struct {
	Level slog.Level
	Msg   string
	Attrs map[string]any
}

func (h *recorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *recorder) Handle(_ context.Context, r slog.Record) error {
	rec := record{Level: r.Level, Msg: r.Message, Attrs: map[string]any{}}
	var add func(prefix string, a slog.Attr)
	add = func(prefix string, a slog.Attr) {
		v := a.Value.Resolve()
		if v.Kind() == slog.KindGroup {
			for _, g := range v.Group() {
				add(prefix+a.Key+".", g)
			}
			return
		}
		rec.Attrs[prefix+a.Key] = v.Any()
	}
	r.Attrs(func(a slog.Attr) bool { add("", a); return true })
	h.mu.Lock()
	h.records = append(h.records, rec)
	h.mu.Unlock()
	return nil
}

func (h *recorder) WithAttrs([]slog.Attr) slog.Handler { panic("not used by the runtime") }
func (h *recorder) WithGroup(string) slog.Handler      { panic("not used by the runtime") }

// messages returns "LEVEL msg" for every record.
func (h *recorder) messages() []string {
	out := make([]string, len(h.records))
	for i, r := range h.records {
		out[i] = r.Level.String() + " " + r.Msg
	}
	return out
}

func TestLogOneRecordPerStep(t *testing.T) {
	h := &recorder{}
	u := &llm.Usage{InputTokens: 400, OutputTokens: 10, CachedTokens: 300, CacheWriteTokens: 50}
	m := snapshots.Script(
		snapshots.Reply{Calls: []snapshots.Call{{Name: "increment"}, {Name: "noop"}}, Usage: u},
		snapshots.Reply{Text: "done", Usage: u},
	)
	res, err := runtime.Run(context.Background(), m, scenarioS1, runtime.Config{Logger: slog.New(h), Name: "counter"})
	require.NoError(t, err)
	require.Equal(t, []string{"INFO step", "INFO step", "INFO run ended"}, h.messages())

	for i, r := range h.records[:2] {
		s := res.Steps[i]
		d, ok := r.Attrs["duration"].(time.Duration)
		assert.True(t, ok && d > 0, "step %d: duration %v", i, r.Attrs["duration"])
		delete(r.Attrs, "duration")
		want := map[string]any{
			"agent":             "counter",
			"step":              int64(i),
			"input_tokens":      int64(s.InputTokens),
			"prefix_tokens":     int64(s.PrefixTokens),
			"billed_input":      s.BilledInput,
			"usage.input":       int64(400),
			"usage.output":      int64(10),
			"usage.cached":      int64(300),
			"usage.cache_write": int64(50),
		}
		if i == 0 {
			want["tool_calls"] = []string{"increment", "noop"}
			want["effects"] = []string{"#0 first", "#1 first", "#2 first", "#3 first"}
		} else {
			want["tool_calls"] = []string{}
			want["effects"] = []string{"#0 always", "#2 changed: deps[0]"}
			want["done"] = true
		}
		assert.Empty(t, cmp.Diff(want, r.Attrs), "step %d record mismatch (-want +got)", i)
	}
	assert.Positive(t, res.Steps[1].PrefixTokens)
	end := h.records[2].Attrs
	delete(end, "elapsed")
	assert.Empty(t, cmp.Diff(map[string]any{
		"agent": "counter", "steps": int64(2), "input_tokens": int64(800), "output_tokens": int64(20), "cached_tokens": int64(600),
		"cache_write_tokens": int64(100),
	}, end), "run record mismatch (-want +got)")
}

// TestLogRetriesRecoveriesCompactionsAndErrors runs in a synctest bubble:
// the retry waits its default backoff in fake time.
func TestLogRetriesRecoveriesCompactionsAndErrors(t *testing.T) {
	synctest.Test(t, testLogRetriesRecoveriesCompactionsAndErrors)
}

func testLogRetriesRecoveriesCompactionsAndErrors(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
			if s.ContextTooLong {
				s.CommitMessages([]defs.Message{defs.UserMessage("short")})
			}
			return nil
		}, effects.Recovery())
		p.User("a very long task, much longer than the window allows")
		return nil
	}
	busy := &llm.ModelError{StatusCode: 503, Retryable: true, Message: "busy"}
	tooLong := &llm.ModelError{StatusCode: 400, ContextTooLong: true, Message: "context_length_exceeded"}
	h := &recorder{}
	m := snapshots.Script(snapshots.Fail(busy), snapshots.Fail(tooLong), snapshots.Text("ok"))
	_, err := runtime.Run(context.Background(), m, fn,
		runtime.Config{Logger: slog.New(h), Retries: 1}) // RetryBackoff 0: one second
	require.NoError(t, err)
	require.Equal(t, []string{
		"WARN model call failed: retrying",
		"WARN transcript compacted",
		"INFO step",
		"WARN request too long for the context window: recovered",
		"INFO run ended",
	}, h.messages())
	retry := h.records[0].Attrs
	assert.Equal(t, int64(0), retry["step"])
	assert.Equal(t, int64(1), retry["attempt"])
	assert.Equal(t, "*llm.ModelError", retry["error_type"])
	assert.Contains(t, retry["error"], "busy")
	if d, ok := retry["backoff"].(time.Duration); assert.True(t, ok, "backoff = %v, want a time.Duration", retry["backoff"]) {
		assert.GreaterOrEqual(t, d, time.Second/2, "backoff")
		assert.LessOrEqual(t, d, time.Second, "backoff")
	}
	compacted := h.records[1].Attrs
	assert.Equal(t, int64(1), compacted["messages_before"])
	assert.Equal(t, int64(1), compacted["messages_after"])
	assert.Less(t, compacted["tokens_after"], compacted["tokens_before"])
	assert.Equal(t, true, h.records[2].Attrs["committed"])

	// A failing step: an error record with the error's type.
	h = &recorder{}
	denied := &llm.ModelError{StatusCode: 401, Message: "bad key"}
	_, err = runtime.Run(context.Background(), snapshots.Script(snapshots.Fail(denied)), fn, runtime.Config{Logger: slog.New(h)})
	require.Error(t, err)
	require.Equal(t, []string{"ERROR step failed", "INFO run ended"}, h.messages())
	assert.Empty(t, cmp.Diff(map[string]any{
		"step": int64(0), "error": err.Error(), "error_type": "*llm.ModelError",
	}, h.records[0].Attrs), "error record mismatch (-want +got)")
	assert.Equal(t, "*llm.ModelError", h.records[1].Attrs["error_type"])

	// The step limit: the completed step's record, then the error.
	h = &recorder{}
	_, err = runtime.Run(context.Background(), snapshots.Script(s1Script(3)...), scenarioS1,
		runtime.Config{Logger: slog.New(h), MaxSteps: 1})
	require.ErrorIs(t, err, runtime.ErrMaxSteps)
	require.Equal(t, []string{"INFO step", "ERROR step failed", "INFO run ended"}, h.messages())
	assert.Equal(t, "runtime.ErrMaxSteps", h.records[1].Attrs["error_type"])
}

// TestLogNothingWhenUnset checks that a run without Config.Logger does not
// fall back to the default logger.
func TestLogNothingWhenUnset(t *testing.T) { synctest.Test(t, testLogNothingWhenUnset) }

func testLogNothingWhenUnset(t *testing.T) {
	h := &recorder{}
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(h))
	busy := &llm.ModelError{StatusCode: 503, Retryable: true, Message: "busy"}
	_, err := runtime.Run(context.Background(), snapshots.Script(snapshots.Fail(busy), snapshots.Text("ok")),
		func(p *prompt.Prompt) error { p.User("hi"); return nil }, runtime.Config{Retries: 1})
	require.NoError(t, err)
	assert.Empty(t, h.messages())
}
