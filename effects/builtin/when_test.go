package builtin_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/expr-lang/expr/file"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/effects/builtin"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// stall is the condition of the hardening review: 40,000 concatenations of
// a growing string, 20 s of work under expr's default limits.
const stall = `len(reduce(1..40000, #acc + "xxxxxxxxxx", "")) > 0`

// TestWhenHugeConstantRangeRejected: a constant range past WhenMaxRange is
// a configuration error at the range operator, found by Parse.
func TestWhenHugeConstantRangeRejected(t *testing.T) {
	src := "effects:\n  - kind: compact\n    when: '" + stall + "'\n"
	start := time.Now()
	_, err := builtin.Parse("stall.yaml", []byte(src))
	assert.Less(t, time.Since(start), time.Second)
	var ce *builtin.ConfigError
	require.ErrorAs(t, err, &ce)
	want := &builtin.ConfigError{File: "stall.yaml", Line: 3, Column: 24, Msg: "when: range of more than 10000 elements"}
	assert.Empty(t, cmp.Diff(want, ce), "mismatch (-want +got)")
}

// runWhen runs a short session with a trim effect guarded by cond and
// returns how long the run took and its error.
func runWhen(t *testing.T, ctx context.Context, file, yaml string) (time.Duration, error) {
	t.Helper()
	cfg, err := builtin.Parse(file, []byte(yaml))
	require.NoError(t, err)
	start := time.Now()
	_, err = runtime.Run(ctx, snapshots.Script(reads(3)...), agent(cfg, 100), runtime.Config{})
	return time.Since(start), err
}

// TestWhenStallIsBounded: the stalling condition, with a range the parser
// cannot see the size of, stops at the configured time limit with a typed
// error naming the condition's file, line and column.
func TestWhenStallIsBounded(t *testing.T) {
	cond := `len(reduce(1..(step + 40000), #acc + "xxxxxxxxxx", "")) > 0`
	src := "when_timeout: 100ms\neffects:\n  - kind: trim_tool_results\n    when: '" + cond + "'\n"
	elapsed, err := runWhen(t, context.Background(), "stall.yaml", src)
	assert.Less(t, elapsed, time.Second, "the condition ran past its 100ms limit")
	var we *builtin.WhenError
	require.ErrorAs(t, err, &we)
	assert.ErrorIs(t, err, builtin.ErrWhenTimeout)
	want := builtin.WhenError{File: "stall.yaml", Line: 4, Column: 11, When: cond, Limit: 100 * time.Millisecond, Err: builtin.ErrWhenTimeout}
	assert.Empty(t, cmp.Diff(want, *we, cmpopts.EquateErrors()), "mismatch (-want +got)")
	// The message is the contract here: it names the file, line and column.
	assert.Equal(t, fmt.Sprintf("stall.yaml:4:11: when %q: condition ran past its time limit (100ms)", cond), we.Error())
}

// TestWhenDefaultTimeout: with no when_timeout, DefaultWhenTimeout bounds
// the condition.
func TestWhenDefaultTimeout(t *testing.T) {
	src := "effects:\n  - kind: trim_tool_results\n    when: 'len(reduce(1..(step + 40000), #acc + \"xxxxxxxxxx\", \"\")) > 0'\n"
	elapsed, err := runWhen(t, context.Background(), "default.yaml", src)
	assert.ErrorIs(t, err, builtin.ErrWhenTimeout)
	assert.Less(t, elapsed, time.Second)
}

// TestWhenHonoursContext: the run's context stops a condition before its
// own, longer limit.
func TestWhenHonoursContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	src := "when_timeout: 1m\neffects:\n  - kind: trim_tool_results\n    when: 'len(reduce(1..(step + 40000), #acc + \"xxxxxxxxxx\", \"\")) > 0'\n"
	elapsed, err := runWhen(t, ctx, "ctx.yaml", src)
	assert.Less(t, elapsed, time.Second, "the condition outlived the run's context")
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "err = %v", err)
	assert.False(t, errors.Is(err, builtin.ErrWhenTimeout), "err = %v", err)
}

// TestWhenStringGrowthIsBounded: a string doubling at every iteration is
// stopped at WhenMaxString, before it takes the memory of the process.
func TestWhenStringGrowthIsBounded(t *testing.T) {
	src := "when_timeout: 1m\neffects:\n  - kind: trim_tool_results\n    when: 'len(reduce(1..(step + 60), #acc + #acc, \"x\")) > 0'\n"
	elapsed, err := runWhen(t, context.Background(), "grow.yaml", src)
	assert.Less(t, elapsed, time.Second)
	var we *builtin.WhenError
	require.ErrorAs(t, err, &we)
	assert.ErrorIs(t, err, builtin.ErrWhenTooLarge)
	assert.Equal(t, 4, we.Line)
}

// TestWhenStringGrowthWithoutLoops: values of unknown type (fromJSON) are
// checked too: doubling a string 30 times in variables stops at
// WhenMaxString.
func TestWhenStringGrowthWithoutLoops(t *testing.T) {
	cond := "let a0 = fromJSON(\"\\\"xxxxxxxxxx\\\"\"); let a1 = a0 + a0; let a2 = a1 + a1; let a3 = a2 + a2; let a4 = a3 + a3; let a5 = a4 + a4; let a6 = a5 + a5; let a7 = a6 + a6; let a8 = a7 + a7; let a9 = a8 + a8; let a10 = a9 + a9; let a11 = a10 + a10; let a12 = a11 + a11; let a13 = a12 + a12; let a14 = a13 + a13; let a15 = a14 + a14; let a16 = a15 + a15; let a17 = a16 + a16; let a18 = a17 + a17; let a19 = a18 + a18; let a20 = a19 + a19; let a21 = a20 + a20; let a22 = a21 + a21; let a23 = a22 + a22; let a24 = a23 + a23; let a25 = a24 + a24; let a26 = a25 + a25; let a27 = a26 + a26; let a28 = a27 + a27; let a29 = a28 + a28; let a30 = a29 + a29; len(a30) > 0"
	cfg := &builtin.Config{File: "code", WhenTimeout: time.Minute, Effects: []builtin.Effect{{
		Kind: builtin.KindTrimToolResults, Phase: effects.AfterReply, Trim: &builtin.TrimConfig{}, When: cond,
	}}}
	start := time.Now()
	_, err := runtime.Run(context.Background(), snapshots.Script(reads(3)...), agent(cfg, 100), runtime.Config{})
	assert.Less(t, time.Since(start), time.Second)
	assert.ErrorIs(t, err, builtin.ErrWhenTooLarge)
}

// TestWhenMemoryBudget: ranges built at run time count against
// WhenMemoryBudget.
func TestWhenMemoryBudget(t *testing.T) {
	src := "effects:\n  - kind: trim_tool_results\n    when: 'len(1..(step + 200000)) > 0'\n"
	elapsed, err := runWhen(t, context.Background(), "mem.yaml", src)
	assert.Less(t, elapsed, time.Second)
	assert.ErrorIs(t, err, builtin.ErrWhenTooLarge)
}

// TestWhenTooManyNodes: a condition past WhenMaxNodes is rejected by Parse.
func TestWhenTooManyNodes(t *testing.T) {
	cond := "step > 0"
	for range builtin.WhenMaxNodes / 3 {
		cond += " && step > 0"
	}
	_, err := builtin.Parse("big.yaml", []byte("effects:\n  - kind: compact\n    when: "+cond+"\n"))
	var ce *builtin.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 3, ce.Line)
	assert.Contains(t, ce.Msg, "compilation failed: expression exceeds maximum allowed nodes")
}

// TestWhenTimeoutParsed: when_timeout is read as a duration.
func TestWhenTimeoutParsed(t *testing.T) {
	cfg, err := builtin.Parse("t.yaml", []byte("when_timeout: 20ms\neffects: []\n"))
	require.NoError(t, err)
	assert.Equal(t, 20*time.Millisecond, cfg.WhenTimeout)
	_, err = builtin.Parse("t.yaml", []byte("when_timeout: soon\n"))
	var ce *builtin.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, builtin.ConfigError{File: "t.yaml", Line: 1, Column: 15, Msg: `when_timeout: want a duration like "90s" or a number of seconds, got "soon"`}, *ce)
}

// TestWhenConditionsStillWork: ordinary conditions, including loops and
// strings under the limits, keep their meaning.
func TestWhenConditionsStillWork(t *testing.T) {
	for _, tc := range []struct {
		cond string
		want bool // whether the effect runs (trims) at all
	}{
		{`step >= 1 && last_tool == "read_file"`, true},
		{`all(1..100, # > 0) && upper(last_tool) == "READ_FILE"`, true},
		{`len(reduce(1..100, #acc + "x", "")) == 100 && step > 0`, true},
		{`any(1..100, # > 1000)`, false},
		{`last_tool + "_x" == "nope"`, false},
	} {
		// A generous time limit: these conditions take microseconds, and the
		// default 50 ms could be exceeded on a loaded machine under -race.
		src := "when_timeout: 10s\neffects:\n  - kind: trim_tool_results\n    params: {preserve_recent: -1, batch: 1, min_saving: -1, max_result_length: 10}\n    when: '" + tc.cond + "'\n"
		cfg, err := builtin.Parse("ok.yaml", []byte(src))
		require.NoError(t, err, tc.cond)
		res, err := runtime.Run(context.Background(), snapshots.Script(reads(3)...), agent(cfg, 100), runtime.Config{})
		require.NoError(t, err, tc.cond)
		committed := false
		for _, s := range res.Steps {
			committed = committed || s.Committed
		}
		assert.Equal(t, tc.want, committed, tc.cond)
	}
}

// TestWhenSetInCode: a condition set in code is compiled with the same
// limits when the Config is registered, and a bad one fails the run with a
// *WhenError.
func TestWhenSetInCode(t *testing.T) {
	cfg := &builtin.Config{File: "code", Effects: []builtin.Effect{{
		Kind: builtin.KindTrimToolResults, Phase: effects.AfterReply, Trim: &builtin.TrimConfig{}, When: stall,
	}}}
	start := time.Now()
	_, err := runtime.Run(context.Background(), snapshots.Script(reads(3)...), agent(cfg, 100), runtime.Config{})
	assert.Less(t, time.Since(start), time.Second)
	var we *builtin.WhenError
	require.ErrorAs(t, err, &we)
	assert.Equal(t, stall, we.When)
	var fe *file.Error // expr's error, which says what the condition broke
	require.ErrorAs(t, err, &fe)
	assert.Contains(t, fe.Message, "range of more than 10000 elements")
}

// FuzzWhen: whatever the condition, registering and running it ends
// quickly, without a panic, and any error is a *WhenError.
func FuzzWhen(f *testing.F) {
	for _, c := range []string{
		stall,
		`len(reduce(1..(step + 40000), #acc + "xxxxxxxxxx", "")) > 0`,
		`len(reduce(1..(step + 60), #acc + #acc, "x")) > 0`,
		`len(repeat("x", 100000000)) > 0`,
		`len(replace(replace(replace(replace(replace(replace("xxxxxxxxxx", "x", "xxxxxxxxxx"), "x", "xxxxxxxxxx"), "x", "xxxxxxxxxx"), "x", "xxxxxxxxxx"), "x", "xxxxxxxxxx"), "x", "xxxxxxxxxx")) > 0`,
		`all(1..(step + 3000), all(1..(step + 3000), # > 0))`,
		`len(toJSON(map(1..(step + 50000), {"a": #}))) > 0`,
		`len(join(map(1..(step + 9000), repeat("y", 100)), "")) > 0`,
		`sum(1..(step + 1000000)) > 0`,
		`tokens > 0.6 * window`,
		`1 / (step - step) > 0`,
	} {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, cond string) {
		cfg := &builtin.Config{File: "fuzz", WhenTimeout: 20 * time.Millisecond, Effects: []builtin.Effect{{
			Kind: builtin.KindTrimToolResults, Phase: effects.AfterReply, Trim: &builtin.TrimConfig{}, When: cond,
		}}}
		start := time.Now()
		_, err := runtime.Run(context.Background(), snapshots.Script(reads(2)...), agent(cfg, 100), runtime.Config{})
		d := time.Since(start)
		require.LessOrEqual(t, d, 2*time.Second, "%q: ran %v", cond, d)
		if err != nil {
			var we *builtin.WhenError
			require.ErrorAs(t, err, &we, "%q: %v (%T), want a *WhenError", cond, err, err)
		}
	})
}
