package tokens

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/reprompt/reprompt/defs"
	"github.com/stretchr/testify/assert"
)

func hybridTranscript() []defs.Message {
	return []defs.Message{
		defs.UserMessage("Read the file a.go and tell me what it does."),
		{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "call_1", Name: "read", Arguments: json.RawMessage(`{"path":"a.go"}`)}}},
		{Role: defs.RoleTool, Content: "package a\n\nfunc A() int { return 1 }\n", ToolCallID: "call_1", Name: "read"},
	}
}

func TestHybridBeforeReport(t *testing.T) {
	e := Estimator{}
	h := NewHybrid(e)
	msgs := hybridTranscript()
	got := []any{h.Estimate(msgs), h.Ratio(), h.Scale(100)}
	assert.Empty(t, cmp.Diff([]any{scratch(e, msgs), 1.0, 100}, got), "[Estimate, Ratio, Scale(100)] mismatch (-want +got)")
	h.Observe(msgs, 10, 0, 0) // no usage reported: ignored
	assert.Equal(t, 1.0, h.Ratio(), "Ratio after an empty report")
}

func TestHybridCalibration(t *testing.T) {
	e := Estimator{}
	request := hybridTranscript()
	fixed := 40
	est := fixed + scratch(e, request) // the estimate of the whole request
	reply := defs.AssistantMessage("It defines A, which returns 1.")
	next := defs.UserMessage("Now rename A to B everywhere please.")
	role := e.Text("assistant")
	tests := []struct {
		name      string
		input     int
		wantRatio float64
	}{
		{"exact", est, 1},
		{"under", est * 3 / 2, float64(est*3/2) / float64(est)},
		{"clamped high", est * 10, MaxRatio},
		{"clamped low", est / 10, MinRatio},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHybrid(e)
			h.Observe(request, fixed, tt.input, 7)
			s := func(n int) int { return int(math.Round(tt.wantRatio * float64(n))) }
			msgs := append(append(request[:len(request):len(request)], reply), next)
			want := max(0, tt.input-s(fixed)) + 7 + MessageOverhead + role + s(e.Message(next))
			got := []any{h.Ratio(), h.Estimate(msgs), h.Scale(fixed)}
			assert.Empty(t, cmp.Diff([]any{tt.wantRatio, want, s(fixed)}, got), "[Ratio, Estimate, Scale(fixed)] mismatch (-want +got)")
		})
	}
}

// With an unclamped ratio, Budget.Fixed = Scale(fixed) plus Estimate adds up
// to the reported input, plus the reply, plus the calibrated newer messages.
func TestHybridAddsUpToReport(t *testing.T) {
	e := Estimator{}
	request := hybridTranscript()
	fixed := 2 * scratch(e, request) // so that fixed + E(request) is a multiple of 3
	input := (fixed + scratch(e, request)) * 4 / 3
	h := NewHybrid(e)
	h.Observe(request, fixed, input, 11)
	reply := defs.AssistantMessage("done")
	msgs := append(request[:len(request):len(request)], reply)
	got := h.Scale(fixed) + h.Estimate(msgs)
	assert.Equal(t, input+11+MessageOverhead+e.Text("assistant"), got, "Scale(fixed) + Estimate")
}

func TestHybridViewTailAndCompaction(t *testing.T) {
	e := Estimator{}
	transcript := hybridTranscript()
	reminder := defs.UserMessage("Reminder: answer in one sentence, and name the file you read.")
	request := append(transcript[:len(transcript):len(transcript)], reminder)
	fixed := 30
	input := 2 * (fixed + scratch(e, request)) // ratio 2
	h := NewHybrid(e)
	h.Observe(request, fixed, input, 5)

	reply := defs.AssistantMessage("a.go defines A.")
	tool := defs.Message{Role: defs.RoleTool, Content: "ok", ToolCallID: "call_2"}
	after := append(transcript[:len(transcript):len(transcript)], reply, tool)
	summary := defs.UserMessage("Summary: the user asked about a.go.")
	compacted := []defs.Message{summary, transcript[2]}
	tests := []struct {
		name string
		msgs []defs.Message
		want int
	}{
		// The reminder was in the reported input but is not in the
		// transcript: its calibrated estimate comes off.
		{"view tail", after, input - 2*fixed - 2*e.Message(reminder) + 5 + MessageOverhead + e.Text("assistant") + 2*e.Message(tool)},
		// Nothing in common with the request: the reported part goes
		// away, the rest is the calibrated estimate.
		{"compacted", compacted, 2 * scratch(e, compacted)},
		// The request itself.
		{"request", request, input - 2*fixed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, h.Estimate(tt.msgs), "Estimate")
		})
	}
}
