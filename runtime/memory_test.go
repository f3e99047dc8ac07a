package runtime_test

import (
	"context"
	goruntime "runtime"
	"testing"
	"unsafe"

	"github.com/reprompt/reprompt/defs"
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
	if err != nil {
		tb.Fatal(err)
	}
	after := liveHeap()
	if len(res.Steps) != steps {
		tb.Fatalf("ran %d steps, want %d", len(res.Steps), steps)
	}
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
	if perStep > 4096 {
		t.Errorf("%.0f B retained per step above the transcript, want at most 4096", perStep)
	}
}
