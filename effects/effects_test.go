package effects_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/internal/callsite"
	"github.com/reprompt/reprompt/internal/canon"
	"github.com/reprompt/reprompt/internal/stepmods"
)

// register registers fn on m with the caller's line as its call site, as
// prompt.Effect does; execute plays the part of prompt.Execute, the
// boundary above which frames are not part of the site.
func register(m *effects.Manager, deps effects.Deps, fn effects.Func, opts ...effects.Option) {
	m.Register(callsite.CallerPC(1), deps, fn, opts...)
}

// execute runs one execution of a "prompt function" (body) and the
// before-call effects of step n, and returns the IDs of the effects that ran.
func execute(t *testing.T, m *effects.Manager, n int, body func()) []effects.Ran {
	t.Helper()
	m.Begin()
	body()
	require.NoError(t, m.End(), "step %d: End", n)
	ran, err := m.Run(context.Background(), effects.BeforeCall, effects.NewStep(n, nil))
	require.NoError(t, err, "step %d: Run", n)
	return ran
}

func nop(context.Context, *effects.Step) error { return nil }

func TestCadences(t *testing.T) {
	values := []int{1, 1, 2, 2, 3, 3}
	tests := []struct {
		name string
		deps func(step int) effects.Deps
		want []int // steps at which the effect ran
	}{
		{"Always", func(int) effects.Deps { return effects.Always }, []int{0, 1, 2, 3, 4, 5}},
		{"nil Deps is Always", func(int) effects.Deps { return nil }, []int{0, 1, 2, 3, 4, 5}},
		{"Once", func(int) effects.Deps { return effects.Once }, []int{0}},
		{"On() is Once", func(int) effects.Deps { return effects.On() }, []int{0}},
		{"On(value)", func(s int) effects.Deps { return effects.On(values[s]) }, []int{0, 2, 4}},
		{"On(constant, value)", func(s int) effects.Deps { return effects.On("x", values[s]) }, []int{0, 2, 4}},
		{"On(step)", func(s int) effects.Deps { return effects.On(s) }, []int{0, 1, 2, 3, 4, 5}},
		{"On(constant)", func(int) effects.Deps { return effects.On(42) }, []int{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m effects.Manager
			var got []int
			for step := range values {
				// A new closure at every execution, as a prompt function makes.
				execute(t, &m, step, func() {
					register(&m, tt.deps(step), func(_ context.Context, s *effects.Step) error {
						got = append(got, s.Number)
						return nil
					})
				})
			}
			assert.Empty(t, cmp.Diff(tt.want, got), "steps run mismatch (-want +got)")
		})
	}
}

// Always and Once are constants: no package can reassign them (issue 13
// item 7). This declaration does not compile when they are variables.
const always, once = effects.Always, effects.Once

func TestDepsIsAlways(t *testing.T) {
	assert.True(t, effects.IsAlways(always))
	assert.True(t, effects.IsAlways(nil))
	assert.False(t, effects.IsAlways(once))
	assert.False(t, effects.IsAlways(effects.On(1)))
	assert.False(t, effects.IsAlways(effects.On()))
	assert.Equal(t, "Always", effects.Always.String())
	assert.Equal(t, "Once", effects.Once.String())
}

func TestEffectsRunInRegistrationOrder(t *testing.T) {
	var m effects.Manager
	var order []string
	mk := func(name string) effects.Func {
		return func(context.Context, *effects.Step) error { order = append(order, name); return nil }
	}
	ran := execute(t, &m, 0, func() {
		register(&m, effects.Always, mk("a"))
		register(&m, effects.Once, mk("b"), effects.Key("k"))
		register(&m, effects.On(1), mk("c"))
	})
	assert.Empty(t, cmp.Diff([]string{"a", "b", "c"}, order), "order mismatch (-want +got)")
	var ids []string
	for _, r := range ran {
		ids = append(ids, r.ID)
		assert.True(t, strings.HasPrefix(r.Site, "effects_test.go:"), "Ran.Site = %q, want effects_test.go:<line>", r.Site)
		assert.Equal(t, effects.BeforeCall, r.Phase, "Ran.Phase of %s", r.ID)
	}
	assert.Empty(t, cmp.Diff([]string{"#0", "key:k", "#1"}, ids), "IDs mismatch (-want +got)")
}

func TestOnceRegisteredLaterRunsThen(t *testing.T) {
	var m effects.Manager
	var got []int
	for step := range 4 {
		execute(t, &m, step, func() {
			register(&m, effects.Always, nop)
			if step >= 2 {
				register(&m, effects.Once, func(_ context.Context, s *effects.Step) error {
					got = append(got, s.Number)
					return nil
				})
			}
		})
	}
	assert.Empty(t, cmp.Diff([]int{2}, got), "steps run mismatch (-want +got)")
}

type inner struct {
	secret string
	n      int
}

type withUnexported struct {
	Name string
	in   inner
	p    *inner
}

type node struct {
	Next *node
	V    int
}

func TestEncodeComparesByValue(t *testing.T) {
	f1 := func() {}
	f2 := func() {}
	ch1, ch2 := make(chan int), make(chan int)
	cyc1 := &node{V: 1}
	cyc1.Next = cyc1
	cyc2 := &node{V: 1}
	cyc2.Next = cyc2
	cyc3 := &node{V: 2}
	cyc3.Next = cyc3
	selfMap := map[string]any{}
	selfMap["a"], selfMap["b"] = selfMap, selfMap
	selfSlice := []any{nil, nil}
	selfSlice[0], selfSlice[1] = selfSlice, selfSlice
	one, otherOne, two := 1, 1, 2
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	tests := []struct {
		name   string
		a, b   any
		equal  bool
		reason string // why, where the case is not obvious
	}{
		{"equal slices, distinct arrays", []int{1, 2, 3}, []int{1, 2, 3}, true, ""},
		{"different slices", []int{1, 2, 3}, []int{1, 2, 4}, false, ""},
		{"nil and empty slice", []int(nil), []int{}, true, "a nil slice is written [], as an empty one is"},
		{"slices of different length", []string{"a"}, []string{"a", ""}, false, ""},
		{"arrays", [2]int{1, 2}, [2]int{1, 2}, true, ""},
		{"maps, other insertion order", map[string]int{"a": 1, "b": 2}, map[string]int{"b": 2, "a": 1}, true, "map keys are sorted: Go's map order is random"},
		{"maps, other value", map[string]int{"a": 1}, map[string]int{"a": 2}, false, ""},
		{"nested", map[string][]int{"x": {1}}, map[string][]int{"x": {1}}, true, ""},
		{"structs with unexported fields", withUnexported{"a", inner{"s", 1}, &inner{"p", 2}}, withUnexported{"a", inner{"s", 1}, &inner{"p", 2}}, true, "unexported fields are read: they are part of the value"},
		{"unexported field differs", withUnexported{"a", inner{"s", 1}, nil}, withUnexported{"a", inner{"t", 1}, nil}, false, ""},
		{"unexported pointee differs", withUnexported{p: &inner{n: 1}}, withUnexported{p: &inner{n: 2}}, false, ""},
		{"pointers to equal values", &one, &otherOne, true, "pointers are followed: two allocations of one value are equal"},
		{"pointers to different values", &one, &two, false, ""},
		{"nil pointer and nil", (*int)(nil), nil, true, "a nil pointer and a nil interface are both written nil"},
		{"NaN equals NaN", math.NaN(), math.NaN(), true, "NaN != NaN in Go, but a NaN dependency must not run its effect at every step"},
		{"NaN in a slice", []float64{1, math.NaN()}, []float64{1, math.NaN()}, true, "as NaN, inside a container"},
		{"-0 equals 0", math.Copysign(0, -1), 0.0, true, "-0 == 0 in Go"},
		{"float32", float32(1.5), float32(1.5), true, ""},
		{"complex NaN", complex(math.NaN(), 1), complex(math.NaN(), 1), true, "as NaN, in a complex number"},
		{"strings", "a", "a", true, ""},
		{"strings differ", "a", "b", false, ""},
		{"quoted string is not the number", "1", 1, false, "a string and a number with the same text differ"},
		{"bools", true, false, false, ""},
		{"same func", f1, f1, true, "a func is written as its type and address: compared by identity"},
		{"different funcs", f1, f2, false, "a func is written as its type and address: compared by identity"},
		{"same chan", ch1, ch1, true, "a chan is written as its type and address: compared by identity"},
		{"different chans", ch1, ch2, false, "a chan is written as its type and address: compared by identity"},
		{"equal cycles", cyc1, cyc2, true, "cycles are detected, and compared by the values on them"},
		{"different cycles", cyc1, cyc3, false, "cycles are detected, and compared by the values on them"},
		{"map containing itself", selfMap, selfMap, true, "a cycle through a map ends, without a stack overflow"},
		{"slice containing itself", selfSlice, selfSlice, true, "a cycle through a slice ends, without a stack overflow"},
		{"times", t0, t0.Add(0), true, "a time is written as its instant (RFC 3339), not as its fields"},
		{"different times", t0, t0.Add(time.Second), false, ""},
		{"uints", uint8(3), uint8(3), true, ""},
		{"interfaces in slice", []any{1, "a", nil}, []any{1, "a", nil}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.reason != "" {
				t.Cleanup(func() {
					if t.Failed() {
						t.Logf("why: %s", tt.reason)
					}
				})
			}
			done := make(chan [2]string, 1)
			go func() { done <- [2]string{canon.Encode(tt.a), canon.Encode(tt.b)} }()
			var enc [2]string
			select {
			case enc = <-done:
			case <-time.After(5 * time.Second):
				require.FailNow(t, "Encode did not return")
			}
			assert.Equal(t, tt.equal, enc[0] == enc[1], "Encode(a) == Encode(b)\na: %s\nb: %s", enc[0], enc[1])
			assert.Equal(t, enc[0], canon.Encode(tt.a), "Encode is not deterministic: a second Encode(a)")

			// The same comparison decides whether an effect runs again.
			var m effects.Manager
			runs := 0
			for step, v := range []any{tt.a, tt.b} {
				execute(t, &m, step, func() {
					register(&m, effects.On(v), func(context.Context, *effects.Step) error { runs++; return nil })
				})
			}
			assert.Equal(t, map[bool]int{true: 1, false: 2}[tt.equal], runs, "effect runs")
		})
	}
}

func TestEncodeNeverPanics(t *testing.T) {
	type withFunc struct {
		F  func()
		C  chan int
		M  map[string]func()
		Ch <-chan struct{}
	}
	vals := []any{
		withFunc{F: func() {}, C: make(chan int), M: map[string]func(){"x": nil}},
		(func())(nil),
		map[any]any{1: "a", "1": 2, nil: nil, 1.5: []int{1}},
		struct{ x any }{x: struct{}{}},
		[]error{errors.New("x")},
		new(any),
	}
	for i, v := range vals {
		assert.NotPanics(t, func() { _ = canon.Encode(v) }, "Encode(vals[%d])", i)
	}
}

func TestInPlaceSliceMutationIsAChange(t *testing.T) {
	var m effects.Manager
	todo := []string{"a", "b"}
	var reasons []string
	for step := range 3 {
		if step == 1 {
			todo[0] = "done" // mutated in place, same backing array
		}
		ran := execute(t, &m, step, func() {
			register(&m, effects.On(effects.Named("todo", todo)), nop)
		})
		for _, r := range ran {
			reasons = append(reasons, fmt.Sprintf("%d %s", step, r.Reason))
		}
	}
	want := []string{`0 first run`, `1 todo: ["a", "b"] → ["done", "b"]`}
	assert.Empty(t, cmp.Diff(want, reasons), "reasons mismatch (-want +got)")
}

func TestReasons(t *testing.T) {
	var m effects.Manager
	var got []string
	inputs := []struct {
		count int
		mode  string
	}{{1, "a"}, {2, "a"}, {2, "b"}, {3, "c"}, {3, "c"}}
	for step, in := range inputs {
		ran := execute(t, &m, step, func() {
			register(&m, effects.Always, nop)
			register(&m, effects.On(effects.Named("count", in.count), in.mode), nop)
		})
		for _, r := range ran {
			got = append(got, fmt.Sprintf("%d %s %s", step, r.ID, r.Reason))
		}
	}
	want := []string{
		`0 #0 first run`,
		`0 #1 first run`,
		`1 #0 every step`,
		`1 #1 count: 1 → 2`,
		`2 #0 every step`,
		`2 #1 deps[1]: "a" → "b"`,
		`3 #0 every step`,
		`3 #1 count: 2 → 3, deps[1]: "b" → "c"`,
		`4 #0 every step`,
	}
	assert.Empty(t, cmp.Diff(want, got), "reasons mismatch (-want +got)")
}

func TestReasonDepsLengthChange(t *testing.T) {
	var m effects.Manager
	var got []string
	for step, deps := range []effects.Deps{effects.On(1, 2), effects.On(1), effects.On(1, 5)} {
		for _, r := range execute(t, &m, step, func() { register(&m, deps, nop) }) {
			got = append(got, r.Reason.String())
		}
	}
	want := []string{"first run", "deps[1]: 2 → <none>", "deps[1]: <none> → 5"}
	assert.Empty(t, cmp.Diff(want, got), "reasons mismatch (-want +got)")
	assert.Equal(t, "unknown", effects.Reason{}.String(), "zero Reason")
}

func TestHookOrderChangeIsDetected(t *testing.T) {
	var m effects.Manager
	var sites []string
	body := func(cond bool) {
		if cond {
			sites = append(sites, callsite.Caller(0).String())
			register(&m, effects.Once, nop) // the conditional effect
		}
		sites = append(sites, callsite.Caller(0).String())
		register(&m, effects.On("x"), nop) // the unconditional effect
	}
	execute(t, &m, 0, func() { body(true) })
	condSite := lineAfter(t, sites[0])
	uncondSite := lineAfter(t, sites[1])

	m.Begin()
	body(false)
	err := m.End()
	var he *effects.HookOrderError
	require.ErrorAs(t, err, &he, "End")
	// Each site is one line: the call of the hook (one program counter).
	assert.Equal(t, effects.HookOrderError{Index: 0, Was: condSite, Now: uncondSite}, *he)
	// The message is the contract here: it names both of the user's call
	// sites and the fix, effects.Key.
	for _, s := range []string{condSite, uncondSite, "effects.Key"} {
		assert.Contains(t, err.Error(), s, "the error does not mention %s", s)
	}
}

// lineAfter returns the site one line below site ("f.go:10" → "f.go:11").
func lineAfter(t *testing.T, site string) string {
	t.Helper()
	var file string
	var line int
	i := strings.LastIndexByte(site, ':')
	file = site[:i]
	_, err := fmt.Sscan(site[i+1:], &line)
	require.NoError(t, err, "line number of %q", site)
	return fmt.Sprintf("%s:%d", file, line+1)
}

func TestKeyAvoidsHookOrderError(t *testing.T) {
	var m effects.Manager
	var runs []string
	for step, cond := range []bool{true, false, true, true} {
		execute(t, &m, step, func() {
			if cond {
				register(&m, effects.Once, func(context.Context, *effects.Step) error {
					runs = append(runs, fmt.Sprintf("%d cond", step))
					return nil
				}, effects.Key("cond"))
			}
			register(&m, effects.On("x"), func(context.Context, *effects.Step) error {
				runs = append(runs, fmt.Sprintf("%d main", step))
				return nil
			})
		})
	}
	// main keeps its memory throughout; cond's memory is dropped when it is
	// not registered, so it runs again when it comes back.
	want := []string{"0 cond", "0 main", "2 cond"}
	assert.Empty(t, cmp.Diff(want, runs), "runs mismatch (-want +got)")
}

func TestDuplicateKey(t *testing.T) {
	var m effects.Manager
	m.Begin()
	first := lineAfter(t, callsite.Caller(0).String())
	register(&m, effects.Always, nop, effects.Key("k"))
	second := lineAfter(t, callsite.Caller(0).String())
	register(&m, effects.Always, nop, effects.Key("k"))
	err := m.End()
	var de *effects.DuplicateKeyError
	require.ErrorAs(t, err, &de, "End")
	assert.Equal(t, "k", de.Key, "DuplicateKeyError.Key")
	assert.True(t, strings.HasPrefix(de.First, first), "DuplicateKeyError.First = %q, want %s…", de.First, first)
	assert.True(t, strings.HasPrefix(de.Now, second), "DuplicateKeyError.Now = %q, want %s…", de.Now, second)
	// The message is the contract here: it names both of the user's call
	// sites.
	for _, s := range []string{first, second} {
		assert.Contains(t, err.Error(), s, "the error does not mention %s", s)
	}
	// The next execution starts clean.
	m.Begin()
	register(&m, effects.Always, nop, effects.Key("k"))
	assert.NoError(t, m.End(), "End after a clean execution")
}

func TestCleanups(t *testing.T) {
	var m effects.Manager
	var log []string
	effect := func(name string) effects.Func {
		return func(_ context.Context, s *effects.Step) error {
			log = append(log, fmt.Sprintf("run %s %d", name, s.Number))
			n := s.Number
			s.Cleanup(func() { log = append(log, fmt.Sprintf("cleanup %s %d", name, n)) })
			return nil
		}
	}
	steps := []struct {
		dep                 int
		withGone, withKeyed bool
	}{
		{1, true, true},
		{1, true, true},  // nothing due but gone? gone is Always
		{2, false, true}, // gone disappears: its cleanup runs at End
		{2, false, false},
	}
	for step, st := range steps {
		execute(t, &m, step, func() {
			register(&m, effects.On(st.dep), effect("dep"))
			if st.withGone {
				register(&m, effects.Always, effect("gone"))
			}
			if st.withKeyed {
				register(&m, effects.Once, effect("keyed"), effects.Key("keyed"))
			}
		})
	}
	log = append(log, "close")
	m.Close()
	want := []string{
		"run dep 0", "run gone 0", "run keyed 0",
		"cleanup gone 0", "run gone 1", // cleanup before the next run
		"cleanup gone 1", // gone disappears (End of execution 2)
		"cleanup dep 0", "run dep 2",
		"cleanup keyed 0", // keyed disappears (End of execution 3)
		"close", "cleanup dep 2",
	}
	assert.Empty(t, cmp.Diff(want, log), "log mismatch (-want +got)")
	// Close runs each cleanup once.
	m.Close()
	assert.Equal(t, "cleanup dep 2", log[len(log)-1], "second Close ran cleanups again")
	assert.Len(t, log, len(want), "second Close ran cleanups again")
}

func TestCleanupOutsideEffectPanics(t *testing.T) {
	assert.Panics(t, func() { effects.NewStep(0, nil).Cleanup(func() {}) }, "Cleanup outside an effect")
}

func TestEffectError(t *testing.T) {
	var m effects.Manager
	boom := errors.New("boom")
	var ran []string
	m.Begin()
	register(&m, effects.Always, func(context.Context, *effects.Step) error { ran = append(ran, "a"); return nil })
	site := lineAfter(t, callsite.Caller(0).String())
	register(&m, effects.Always, func(context.Context, *effects.Step) error { return fmt.Errorf("wrapped: %w", boom) })
	register(&m, effects.Always, func(context.Context, *effects.Step) error { ran = append(ran, "c"); return nil })
	require.NoError(t, m.End(), "End")
	got, err := m.Run(context.Background(), effects.BeforeCall, effects.NewStep(7, nil))
	var ee *effects.Error
	require.ErrorAs(t, err, &ee, "Run")
	assert.ErrorIs(t, err, boom, "effects.Error does not unwrap to the effect's error")
	assert.Equal(t, "#1", ee.ID, "Error.ID")
	assert.Equal(t, site, ee.Site, "Error.Site")
	assert.Equal(t, 7, ee.Step, "Error.Step")
	assert.Equal(t, effects.BeforeCall, ee.Phase, "Error.Phase")
	assert.Empty(t, ee.PanicSite, "Error.PanicSite")
	// The message is the contract here: it names the user's call site.
	assert.Contains(t, err.Error(), site, "the error does not name the effect's site")
	assert.Empty(t, cmp.Diff([]string{"a"}, ran), "effects run mismatch (-want +got)")
	assert.Len(t, got, 2, "effects Run reported (the failing one included)")
}

func TestEffectPanic(t *testing.T) {
	tests := []struct {
		name    string
		value   any
		wantMsg string
	}{
		{"string", "kaput", "panic: kaput"},
		{"error", errors.New("bad"), "bad"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m effects.Manager
			m.Begin()
			var panicSite string
			register(&m, effects.Once, func(context.Context, *effects.Step) error {
				panicSite = lineAfter(t, callsite.Caller(0).String())
				panic(tt.value)
			}, effects.Key("p"), effects.InPhase(effects.AfterReply))
			require.NoError(t, m.End(), "End")
			ran, err := m.Run(context.Background(), effects.BeforeCall, effects.NewStep(3, nil))
			require.NoError(t, err, "BeforeCall")
			require.Empty(t, ran, "BeforeCall ran an AfterReply effect")
			_, err = m.Run(context.Background(), effects.AfterReply, effects.NewStep(3, nil))
			var ee *effects.Error
			require.ErrorAs(t, err, &ee, "Run")
			assert.Equal(t, "key:p", ee.ID, "Error.ID")
			assert.Equal(t, 3, ee.Step, "Error.Step")
			assert.Equal(t, effects.AfterReply, ee.Phase, "Error.Phase")
			assert.Equal(t, panicSite, ee.PanicSite, "Error.PanicSite")
			// Error has no field for the panic value: Err carries its text.
			assert.EqualError(t, ee.Err, tt.wantMsg, "Error.Err")
			// The message is the contract here: it names the panic's site.
			assert.Contains(t, err.Error(), "panicked at "+panicSite, "the error does not name the panic site")
		})
	}
}

func TestPhaseString(t *testing.T) {
	assert.Equal(t, "before-call", effects.BeforeCall.String(), "BeforeCall.String()")
	assert.Equal(t, "after-reply", effects.AfterReply.String(), "AfterReply.String()")
}

func TestMemoryRestore(t *testing.T) {
	var m effects.Manager
	body := func(mm *effects.Manager, count int, runs *[]string) {
		register(mm, effects.On(count), func(context.Context, *effects.Step) error { *runs = append(*runs, "count"); return nil })
		register(mm, effects.Once, func(context.Context, *effects.Step) error { *runs = append(*runs, "once"); return nil })
		register(mm, effects.On([]int{count}), func(context.Context, *effects.Step) error { *runs = append(*runs, "keyed"); return nil }, effects.Key("k"))
	}
	// One closure literal, so that every execution calls body from the
	// same place, as a prompt function does.
	prompt := func(mm *effects.Manager, count int, runs *[]string) func() {
		return func() { body(mm, count, runs) }
	}
	var runs []string
	execute(t, &m, 0, prompt(&m, 1, &runs))

	mem := m.Memory()
	// By position and key: no call site in what a checkpoint stores.
	assert.JSONEq(t, `{"slots":[{"ran":true,"deps":["1"]},{"ran":true}],"keyed":{"k":{"ran":true,"deps":["[1]"]}}}`, string(mem))
	var none effects.Manager
	assert.JSONEq(t, `{}`, string(none.Memory()), "a manager whose effects never ran")
	assert.Error(t, none.Restore([]byte(`{"slots":`)), "memory that is not JSON is refused")

	// A fresh manager restored from the memory does not run again the
	// effects whose dependencies did not change, even from new call sites.
	var r effects.Manager
	require.NoError(t, r.Restore(mem))
	var after []string
	execute(t, &r, 1, prompt(&r, 1, &after))
	assert.Empty(t, after, "restored manager ran effects whose dependencies did not change")
	execute(t, &r, 2, prompt(&r, 2, &after))
	assert.Empty(t, cmp.Diff([]string{"count", "keyed"}, after), "runs mismatch (-want +got)")
}

func msgs(texts ...string) []defs.Message {
	out := make([]defs.Message, len(texts))
	for i, s := range texts {
		out[i] = defs.UserMessage(s)
	}
	return out
}

func contents(ms []defs.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Content
	}
	return out
}

func TestStepViewsAndCommits(t *testing.T) {
	backing := make([]defs.Message, 2, 10) // spare capacity must not be written
	copy(backing, msgs("a", "b"))
	tr := backing[:2]

	s := effects.NewStep(4, tr)
	s.AppendMessages(defs.UserMessage("view1"))
	assert.Empty(t, cmp.Diff([]string{"a", "b", "view1"}, contents(s.Messages())), "view mismatch (-want +got)")
	assert.Empty(t, cmp.Diff([]string{"a", "b"}, contents(s.Transcript())), "a view changed the transcript (-want +got)")
	assert.Empty(t, backing[:3][2].Content, "AppendMessages wrote into the transcript's spare capacity")
	mods := s.Mods()
	assert.True(t, mods.Viewed, "after AppendMessages: Viewed")
	assert.False(t, mods.Committed, "after AppendMessages: Committed")

	s.ReplaceMessages(msgs("only"))
	s.AppendMessages(defs.UserMessage("tail"))
	assert.Empty(t, cmp.Diff([]string{"only", "tail"}, contents(s.Mods().Messages)), "replaced view mismatch (-want +got)")
	assert.Empty(t, cmp.Diff([]string{"a", "b"}, contents(s.Transcript())), "ReplaceMessages changed the transcript (-want +got)")

	// A commit drops the earlier views and replaces the transcript.
	s.CommitMessages(msgs("summary", "b"))
	mods = s.Mods()
	assert.True(t, mods.Committed, "after CommitMessages: Committed")
	assert.False(t, mods.Viewed, "after CommitMessages: Viewed")
	assert.Empty(t, cmp.Diff([]string{"summary", "b"}, contents(mods.Transcript)), "committed transcript mismatch (-want +got)")
	assert.Empty(t, cmp.Diff([]string{"summary", "b"}, contents(s.Transcript())), "Transcript() after commit mismatch (-want +got)")
	// A view after the commit applies on top of it, and stays a view.
	s.AppendMessages(defs.UserMessage("volatile"))
	mods = s.Mods()
	assert.Empty(t, cmp.Diff([]string{"summary", "b", "volatile"}, contents(mods.Messages)), "view after commit mismatch (-want +got)")
	assert.Empty(t, cmp.Diff([]string{"summary", "b"}, contents(mods.Transcript)), "a view after the commit reached the committed transcript (-want +got)")
	assert.Empty(t, cmp.Diff([]string{"a", "b"}, contents(tr)), "the step modified the caller's transcript (-want +got)")
}

func TestStepEffectsSeeEarlierChanges(t *testing.T) {
	var m effects.Manager
	var seen []string
	execute(t, &m, 0, func() {}) // warm up
	m.Begin()
	register(&m, effects.Always, func(_ context.Context, s *effects.Step) error {
		s.AppendMessages(defs.UserMessage("from first"))
		return nil
	})
	register(&m, effects.Always, func(_ context.Context, s *effects.Step) error {
		seen = contents(s.Messages())
		return nil
	})
	require.NoError(t, m.End(), "End")
	_, err := m.Run(context.Background(), effects.BeforeCall, effects.NewStep(1, msgs("t")))
	require.NoError(t, err, "Run")
	assert.Empty(t, cmp.Diff([]string{"t", "from first"}, seen), "second effect saw (-want +got)")
}

func TestLimitToolsAndSystemsIntersect(t *testing.T) {
	s := effects.NewStep(0, nil)
	fresh := s.Mods()
	require.Nil(t, fresh.Tools, "a fresh step limits tools")
	require.Nil(t, fresh.Systems, "a fresh step limits systems")
	s.LimitTools("read", "write", "list")
	s.LimitTools("write", "list", "delete") // never adds delete
	s.LimitSystems("role", "rules")
	s.LimitSystems("rules")
	m := s.Mods()
	assert.Empty(t, cmp.Diff([]string{"write", "list"}, m.Tools), "tools mismatch (-want +got)")
	assert.Empty(t, cmp.Diff([]string{"rules"}, m.Systems), "systems mismatch (-want +got)")
	s.LimitTools()
	assert.Equal(t, []string{}, s.Mods().Tools, "LimitTools(): want an empty, non-nil list (no tool)")
}

func TestSetVariable(t *testing.T) {
	s := effects.NewStep(0, nil)
	s.SetVariable("b", "1")
	s.SetVariable("a", []int{1})
	s.SetVariable("b", "2") // keeps its position
	want := []stepmods.Variable{{Name: "b", Value: "2"}, {Name: "a", Value: []int{1}}}
	assert.Empty(t, cmp.Diff(want, s.Mods().Variables), "variables mismatch (-want +got)")
}

func TestStepCarriesContext(t *testing.T) {
	var m effects.Manager
	type ctxKey struct{}
	ctx := context.WithValue(context.Background(), ctxKey{}, "v")
	var got any
	m.Begin()
	register(&m, effects.Once, func(ctx context.Context, s *effects.Step) error { got = ctx.Value(ctxKey{}); return nil })
	require.NoError(t, m.End(), "End")
	_, err := m.Run(ctx, effects.BeforeCall, effects.NewStep(0, nil))
	require.NoError(t, err, "Run")
	assert.Equal(t, "v", got, "effect's context value")
}

// TestHookOrderThroughAHelper registers effects through a helper function,
// one call of it inside an if. An effect is identified by its position and
// its site is the one line that calls the hook (inside the helper, the same
// line for both), as React identifies hooks: the changed order is not seen,
// and the memory goes by position. Keys are the fix, as the package doc
// says; this test pins that the keyed form keeps each effect's memory.
func TestHookOrderThroughAHelper(t *testing.T) {
	var m effects.Manager
	onChange := func(v string) { register(&m, effects.On(v), nop, effects.Key(v)) }
	body := func(cond bool) {
		if cond {
			onChange("A")
		}
		onChange("B")
	}
	ran := execute(t, &m, 0, func() { body(true) })
	assert.Equal(t, []string{"key:A", "key:B"}, ranIDs(ran))
	ran = execute(t, &m, 1, func() { body(false) })
	assert.Empty(t, ran, "B keeps its memory under its key")
	ran = execute(t, &m, 2, func() { body(true) })
	assert.Equal(t, []string{"key:A"}, ranIDs(ran), "A was dropped when it was not registered, and runs again")
}

func ranIDs(ran []effects.Ran) []string {
	var ids []string
	for _, r := range ran {
		ids = append(ids, r.ID)
	}
	return ids
}
