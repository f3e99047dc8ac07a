package runtime_test

import (
	"context"
	"reflect"
	goruntime "runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// transcriptBytes returns the memory a transcript holds on its own: its
// backing array (capacity included), the arrays of tool calls, and every
// distinct string and argument buffer its messages point to (counted once
// however many messages share it).
func transcriptBytes(msgs []defs.Message) int {
	seen := map[unsafe.Pointer]bool{}
	n := cap(msgs) * int(unsafe.Sizeof(defs.Message{}))
	buf := func(p unsafe.Pointer, size int) {
		if size > 0 && !seen[p] {
			seen[p] = true
			n += size
		}
	}
	str := func(s string) { buf(unsafe.Pointer(unsafe.StringData(s)), len(s)) }
	for _, m := range msgs {
		str(string(m.Role))
		str(m.Content)
		str(m.Reasoning)
		str(m.ToolCallID)
		str(m.Name)
		if len(m.ToolCalls) > 0 {
			buf(unsafe.Pointer(unsafe.SliceData(m.ToolCalls)), cap(m.ToolCalls)*int(unsafe.Sizeof(defs.ToolCall{})))
		}
		for _, c := range m.ToolCalls {
			str(c.ID)
			str(c.Name)
			buf(unsafe.Pointer(unsafe.SliceData(c.Arguments)), cap(c.Arguments))
		}
		for k, v := range m.Meta {
			str(k)
			str(v)
		}
	}
	return n
}

func liveHeap() uint64 {
	var ms goruntime.MemStats
	goruntime.GC()
	goruntime.GC()
	goruntime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// retainedPerStep runs S1 for steps steps and returns the live heap the
// result holds beyond its transcript's own bytes, per step.
func retainedPerStep(tb testing.TB, steps int) (perStep float64, retained uint64, transcript int) {
	script := s1Script(steps)
	cfg := runtime.Config{MaxSteps: steps}
	before := liveHeap()
	// The scripted model keeps every request: it is left unreachable.
	res, err := runtime.Run(context.Background(), snapshots.Script(script...), scenarioS1, cfg)
	require.NoError(tb, err)
	after := liveHeap()
	require.Len(tb, res.Steps, steps, "steps run")
	retained = after - before
	transcript = transcriptBytes(res.Transcript)
	goruntime.KeepAlive(res)
	return float64(int64(retained)-int64(transcript)) / float64(steps), retained, transcript
}

// TestRetainedHeapPerStep checks the memory target of S1: the live heap a
// 990-step result holds (its step records, requests, replies, tool
// results, state snapshots) stays within 4 KB a step above the bytes of
// its transcript.
func TestRetainedHeapPerStep(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 990 steps")
	}
	retainedPerStep(t, 10) // fill process-wide caches first
	perStep, retained, transcript := retainedPerStep(t, 990)
	t.Logf("990 steps: %d B retained, transcript %d B, %.0f B/step above the transcript", retained, transcript, perStep)
	assert.LessOrEqual(t, perStep, 4096.0, "bytes retained per step above the transcript")
}

// TestStepStateSharedWhileUnchanged checks the copy-on-write of
// Step.State: records after which the state did not change share one map,
// and a change gives the next record a new map with the new value.
func TestStepStateSharedWhileUnchanged(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		n, setN := prompt.State(p, "n", 0)
		prompt.DefTool(p, "bump", "d", func(ctx context.Context, _ struct{}) (int, error) { setN.Set(ctx, n+1); return n + 1, nil })
		prompt.DefTool(p, "look", "d", func(context.Context, struct{}) (int, error) { return n, nil })
		p.User("go")
		return nil
	}
	m := snapshots.Script(snapshots.CallTool("look", nil), snapshots.CallTool("look", nil),
		snapshots.CallTool("bump", nil), snapshots.CallTool("look", nil), snapshots.Text("done"))
	res, err := runtime.Run(context.Background(), m, fn, runtime.Config{})
	require.NoError(t, err)
	st := res.Steps
	same := func(a, b map[string]any) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	// Records after which the state did not change share their map.
	assert.True(t, same(st[0].State, st[1].State), "records 0 and 1 do not share their state map")
	assert.True(t, same(st[2].State, st[3].State), "records 2 and 3 do not share their state map")
	assert.True(t, same(st[3].State, st[4].State), "records 3 and 4 do not share their state map")
	assert.False(t, same(st[1].State, st[2].State), "the record after a change shares the map of the one before")
	assert.Equal(t, 0, st[1].State["n"], "n at step 1")
	assert.Equal(t, 1, st[2].State["n"], "n at step 2")
	assert.Equal(t, 1, st[4].State["n"], "n at step 4")
}
