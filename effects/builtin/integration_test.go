package builtin_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/effects/builtin"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

type pathArgs struct {
	Path string `json:"path"`
}

// agent returns a prompt function with a read_file tool returning size
// characters, that registers cfg.
func agent(cfg *builtin.Config, size int) prompt.Func {
	return func(p *prompt.Prompt) error {
		p.DefSystem("role", "You read files.")
		prompt.DefTool(p, "read_file", "Read a file.", func(ctx context.Context, a pathArgs) (string, error) {
			return a.Path + ": " + strings.Repeat("x", size), nil
		})
		cfg.Register(p)
		p.User("Read the files.")
		return nil
	}
}

func reads(n int) []snapshots.Reply {
	var rs []snapshots.Reply
	for i := range n {
		rs = append(rs, snapshots.CallTool("read_file", pathArgs{Path: "f" + string(rune('a'+i%26)) + ".go"}))
	}
	return append(rs, snapshots.Text("Done."))
}

func checkRequests(t *testing.T, reqs []*llm.Request) {
	t.Helper()
	for i, r := range reqs {
		require.NoError(t, runtime.ValidateMessages(r.Messages), "request %d", i)
	}
}

func TestRunTrim(t *testing.T) {
	cfg, err := builtin.Parse("trim.yaml", []byte("effects:\n  - kind: trim_tool_results\n    params: {preserve_recent: 1, batch: 2}\n"))
	require.NoError(t, err)
	model := snapshots.Script(reads(6)...)
	res, err := runtime.Run(context.Background(), model, agent(cfg, 2000), runtime.Config{})
	require.NoError(t, err)
	reqs := model.Requests()
	checkRequests(t, reqs)
	last := reqs[len(reqs)-1].Messages
	var trimmed, full int
	for _, m := range last {
		if m.Role != defs.RoleTool {
			continue
		}
		if m.Meta[builtin.MetaTrimmed] != "" {
			trimmed++
			assert.LessOrEqual(t, len(m.Content), 600, "trimmed result is %d long", len(m.Content))
		} else {
			full++
		}
	}
	// Six results, the last preserved; trimmed in batches of two, so four.
	assert.Equal(t, 4, trimmed, "trimmed %d, full %d:\n%s", trimmed, full, dump(last))
	assert.Equal(t, 2, full, "trimmed %d, full %d:\n%s", trimmed, full, dump(last))
	commits := 0
	for _, s := range res.Steps {
		if s.Committed {
			commits++
		}
	}
	assert.Equal(t, 2, commits, "%d commits, want 2 (batches of two)", commits)
	// Prompt-cache discipline: each request starts with the previous one's
	// messages, except at the steps after a commit.
	breaks := 0
	for i := 1; i < len(reqs); i++ {
		prev, cur := reqs[i-1].Messages, reqs[i].Messages
		same := len(cur) >= len(prev)
		for j := 0; same && j < len(prev); j++ {
			same = prev[j].Content == cur[j].Content
		}
		if !same {
			breaks++
		}
	}
	assert.Equal(t, commits, breaks, "the prefix broke %d times for %d commits", breaks, commits)
}

func TestRunCompactWithTheRunsModel(t *testing.T) {
	var infos []builtin.Info
	cfg := builtin.Defaults(builtin.Profile{Window: 6000, OutputReserve: 1000})
	cfg.OnCompaction = func(i builtin.Info) { infos = append(infos, i) }
	var calls, summaries atomic.Int32
	reply := snapshots.Reply{Func: func(req *llm.Request) snapshots.Reply {
		if req.Purpose == llm.PurposeSummary {
			summaries.Add(1)
			return snapshots.Text("The user asked to read files; many were read.")
		}
		if calls.Add(1) > 30 {
			return snapshots.Text("Done.")
		}
		return snapshots.CallTool("read_file", pathArgs{Path: "f.go"})
	}}
	var script []snapshots.Reply
	for range 60 {
		script = append(script, reply)
	}
	for range 30 { // summary requests have a list of their own
		script = append(script, snapshots.Reply{Summary: true, Func: reply.Func})
	}
	model := snapshots.Script(script...)
	_, err := runtime.Run(context.Background(), model, agent(cfg, 1500), runtime.Config{Window: 6000, Reserve: 1000})
	require.NoError(t, err)
	require.NoError(t, model.Err())
	reqs := model.Requests()
	var steps []*llm.Request
	for _, r := range reqs {
		if r.Purpose != llm.PurposeSummary {
			steps = append(steps, r)
		}
	}
	checkRequests(t, steps)
	require.NotZero(t, summaries.Load(), "no summary: %d compactions", len(infos))
	require.NotEmpty(t, infos, "no summary: %d compactions", len(infos))
	for i, r := range steps {
		n := snapshots.EstimateTokens(r)
		assert.LessOrEqual(t, n, 5000, "request %d: %d tokens, usable 5000", i, n)
	}
	last := steps[len(steps)-1].Messages
	require.Equal(t, "Read the files.", last[0].Content, "layout after compaction:\n%s", dump(last[:3]))
	require.True(t, strings.HasPrefix(last[1].Content, "<summary>\n"), "layout after compaction:\n%s", dump(last[:3]))
	require.NotEmpty(t, last[1].Meta[builtin.MetaSummary], "layout after compaction:\n%s", dump(last[:3]))
	assert.Contains(t, last[1].Content, "<read-files>\nf.go\n</read-files>", "files not tracked:\n%s", last[1].Content)
}

func TestRunCompactRecoversFromContextTooLong(t *testing.T) {
	model := &fakeModel{}
	var infos []builtin.Info
	compact := builtin.Compact(builtin.CompactConfig{Model: model, OnCompaction: func(i builtin.Info) { infos = append(infos, i) }})
	rejected := false
	var script []snapshots.Reply
	for i := range 6 {
		script = append(script, snapshots.CallTool("read_file", pathArgs{Path: "f" + string(rune('a'+i)) + ".go"}))
	}
	script = append(script,
		snapshots.Reply{Func: func(req *llm.Request) snapshots.Reply {
			rejected = true
			return snapshots.Fail(&llm.ModelError{StatusCode: 400, ContextTooLong: true, Message: "context_length_exceeded"})
		}},
		snapshots.Text("Done."))
	scripted := snapshots.Script(script...)
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "read_file", "Read a file.", func(ctx context.Context, a pathArgs) (string, error) {
			return strings.Repeat("y", 1000), nil
		})
		p.Effect(effects.Always, compact, effects.Key("compact"), effects.Recovery())
		p.User("Read.")
		return nil
	}
	// A window far above what is used: only the rejection compacts.
	res, err := runtime.Run(context.Background(), scripted, fn, runtime.Config{Window: 1_000_000})
	require.NoError(t, err)
	require.True(t, rejected, "rejected=%v infos=%+v", rejected, infos)
	require.Len(t, infos, 1, "rejected=%v infos=%+v", rejected, infos)
	require.True(t, infos[0].Forced, "rejected=%v infos=%+v", rejected, infos)
	assert.True(t, res.Steps[len(res.Steps)-1].Recovered, "the last step was not recovered")
	reqs := scripted.Requests()
	final := reqs[len(reqs)-1].Messages
	_, at := summaries(final)
	require.Equal(t, 1, at, "the request sent again was not compacted:\n%s", dump(final))
	require.Less(t, len(final), len(reqs[len(reqs)-2].Messages), "the request sent again was not compacted:\n%s", dump(final))
}

func TestRunLimits(t *testing.T) {
	cfg, err := builtin.Parse("limits.yaml", []byte("effects:\n  - kind: limits\n    params: {max_iterations: 5}\n"))
	require.NoError(t, err)
	model := snapshots.Script(reads(20)...)
	_, err = runtime.Run(context.Background(), model, agent(cfg, 10), runtime.Config{})
	require.ErrorIs(t, err, builtin.ErrIterationLimit, "err = %v", err)
	var ee *effects.Error
	var le *builtin.LimitError
	require.ErrorAs(t, err, &ee, "err = %#v", err)
	require.ErrorAs(t, err, &le, "err = %#v", err)
	require.Equal(t, 5.0, le.Used, "LimitError = %+v", le)
	require.Equal(t, 5.0, le.Max, "LimitError = %+v", le)
	reqs := model.Requests()
	require.Len(t, reqs, 5, "%d model calls, want 5", len(reqs))
	for i, r := range reqs {
		tail := r.Messages[len(r.Messages)-1]
		warned := tail.Role == defs.RoleUser && strings.Contains(tail.Content, "Finish now")
		assert.Equal(t, i >= 3, warned, "request %d: wrap-up", i) // 4 of 5 is 80%
		if i > 0 {
			assert.NotContains(t, r.Messages[len(r.Messages)-2].Content, "Finish now", "request %d: the wrap-up of the previous step stayed in the transcript", i)
		}
	}
}

func TestRunWhen(t *testing.T) {
	src := "effects:\n  - kind: trim_tool_results\n    params: {preserve_recent: -1, batch: 1}\n    when: step >= 3 && last_tool == \"read_file\"\n"
	cfg, err := builtin.Parse("when.yaml", []byte(src))
	require.NoError(t, err)
	model := snapshots.Script(reads(5)...)
	res, err := runtime.Run(context.Background(), model, agent(cfg, 1000), runtime.Config{})
	require.NoError(t, err)
	for _, s := range res.Steps {
		// From step 3 on, each new result is trimmed.
		assert.Equal(t, s.Number == 3 || s.Number == 4, s.Committed, "step %d: committed", s.Number)
	}
}

// TestRunSharedConfig runs one Config in several runs at once: each prompt
// gets its own effects, so their memories do not mix (run with -race).
func TestRunSharedConfig(t *testing.T) {
	cfg, err := builtin.Parse("shared.yaml", []byte("effects:\n  - kind: trim_tool_results\n    params: {preserve_recent: 1, batch: 2}\n  - kind: compact\n    params: {window: 4000, strategy: heuristic}\n"))
	require.NoError(t, err)
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			model := snapshots.Script(reads(10 + i)...)
			_, err := runtime.Run(context.Background(), model, agent(cfg, 1500), runtime.Config{})
			if err == nil {
				for j, r := range model.Requests() {
					if verr := runtime.ValidateMessages(r.Messages); verr != nil {
						err = fmt.Errorf("run %d request %d: %w", i, j, verr)
						break
					}
					if n := snapshots.EstimateTokens(r); n > 4000 {
						err = fmt.Errorf("run %d request %d: %d tokens", i, j, n)
						break
					}
				}
			}
			errs <- err
		}()
	}
	for range 8 {
		assert.NoError(t, <-errs)
	}
}

// TestRunLimitsBeforeCompact lists limits before compact: the wrap-up view
// must survive the compaction's commit at the same step.
func TestRunLimitsBeforeCompact(t *testing.T) {
	src := "effects:\n  - kind: limits\n    params: {max_iterations: 6, warn: 0.5}\n  - kind: compact\n    params: {window: 2000, strategy: truncate}\n"
	cfg, err := builtin.Parse("order.yaml", []byte(src))
	require.NoError(t, err)
	model := snapshots.Script(reads(10)...)
	res, err := runtime.Run(context.Background(), model, agent(cfg, 1500), runtime.Config{})
	require.ErrorIs(t, err, builtin.ErrIterationLimit, "err = %v", err)
	committedAfterWarn := false
	for i, r := range model.Requests() {
		tail := r.Messages[len(r.Messages)-1]
		warned := strings.Contains(tail.Content, "Finish now")
		want := i >= 2
		assert.Equal(t, want, warned, "request %d: wrap-up %v, want %v", i, warned, want)
		if i >= 2 && res.Steps[i].Committed {
			committedAfterWarn = true
		}
	}
	assert.True(t, committedAfterWarn, "no compaction at a step with a wrap-up: the test does not test the order")
}

// A compact effect's reserve param is kept when the file's profile gives
// the window: it was silently replaced by the profile's reserve.
func TestRunCompactKeepsItsReserveUnderAProfile(t *testing.T) {
	src := "window: 20000\nreserve: 1000\neffects:\n  - kind: compact\n    params: {reserve: 15000, strategy: heuristic}\n"
	cfg, err := builtin.Parse("c.yaml", []byte(src))
	require.NoError(t, err)
	var infos []builtin.Info
	cfg.OnCompaction = func(i builtin.Info) { infos = append(infos, i) }
	model := snapshots.Script(reads(12)...)
	_, err = runtime.Run(context.Background(), model, agent(cfg, 1500), runtime.Config{Window: 20000, Reserve: 1000})
	require.NoError(t, err)
	require.NotEmpty(t, infos, "no compaction: the reserve of 15000 (usable 5000) was ignored")
	for i, r := range model.Requests() {
		n := snapshots.EstimateTokens(r)
		assert.LessOrEqual(t, n, 5000, "request %d: %d tokens, usable 5000", i, n)
	}
}
