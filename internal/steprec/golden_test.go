package steprec_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/internal/steprec"
)

// goldenRun is a run in the form Parse returns: every part a golden file
// shows, with steps that refer to earlier ones ("as in step N"), a paused
// and a decided step (completed by a resume), a step a crash cut short
// after the reply and its completion by a resume, a sub-agent and a
// summary.
func goldenRun() *steprec.Run {
	sys := "You are terse.\n-- not a section --\nBye."
	first := []defs.Message{{Role: defs.RoleUser, Content: "add 2 and 3", Meta: map[string]string{"k": "v"}}}
	call := defs.Message{Role: defs.RoleAssistant, Reasoning: "think\nharder", ToolCalls: []defs.ToolCall{{ID: "c1", Name: "add", Arguments: json.RawMessage(`{"a":2,"b":3}`)}}}
	result := defs.Message{Role: defs.RoleTool, ToolCallID: "c1", Name: "add", Content: "5", IsError: true}
	tools := []steprec.Tool{{Name: "add", Description: "adds\ntwo numbers", Schema: `{"type":"object"}`}}
	sub := steprec.Step{Step: 0, Request: &steprec.Request{Messages: []defs.Message{{Role: defs.RoleUser, Content: "sub"}}},
		Response: &steprec.Response{Message: defs.Message{Role: defs.RoleAssistant, Content: "done"}}, Finish: "stop", State: map[string]string{}}
	sub2 := sub
	sub2.Step = 1
	return &steprec.Run{Err: "step 1: boom (at x.go)", Steps: []*steprec.Step{
		{Step: 0, Turn: 2, Sent: []string{"a question", "and \"quotes\"\nover lines"}, Committed: true,
			Effects:      []effects.Ran{{ID: "#0", Site: "a.go", Phase: effects.AfterReply, Reason: effects.Reason{Kind: effects.ReasonChanged, Changes: []effects.Change{{Name: "count", From: "1", To: "2"}, {Index: 1, From: `"a"`, To: `"b"`}}}}},
			SummaryCalls: []steprec.Summary{{System: "sum", Messages: []defs.Message{{Role: defs.RoleUser, Content: "a\nb"}}, Text: "short", Answered: true}, {Error: "no model"}},
			Summaries:    2,
			Disabled:     []string{"tool:x"}, Reminded: []string{"message:y"},
			Tools:   []string{"add"},
			Request: &steprec.Request{System: sys, Tools: tools, Output: &steprec.Output{Name: "sum", Type: "main.Sum", Mode: "native", Description: "the sum", Schema: `{"type":"integer"}`}, Messages: first},
			Finish:  "tool_calls", Response: &steprec.Response{Refusal: "no\nway", Message: call},
			Results: []steprec.Result{{CallID: "c1", Name: "add", Arguments: `{"a":2,"b":3}`, Content: "5", IsError: true}},
			Agents:  []steprec.Agent{{CallID: "c1", Name: "helper", Steps: []steprec.Step{sub, sub2}, Error: "failed"}},
			State:   map[string]string{"n": "5", "long": `{"text":"` + strings.Repeat("x", 120) + `"}`},
		},
		{Step: 1, Effects: []effects.Ran{{ID: "key:k", Site: "b.go", Reason: effects.Reason{Kind: effects.ReasonFirst}}},
			Tools:    []string{"add"},
			Request:  &steprec.Request{System: sys, Tools: tools, Output: &steprec.Output{Name: "sum", Type: "main.Sum", Mode: "tool"}, Messages: append(append(first[:1:1], call), result)},
			Awaiting: []steprec.Awaiting{{CallID: "c2", Tool: "pay", Arguments: `{"x":1}`}},
			State:    map[string]string{"n": "5"},
		},
		{Step: 1, Decisions: []steprec.Decision{{CallID: "c2", Tool: "pay", Approved: true}, {CallID: "c4", Tool: "book", Approved: true, Asked: []steprec.Asked{{Question: "How many: really?", Answer: json.RawMessage(`2`)}, {Question: "Where?", Answer: json.RawMessage(`"patio"`)}}}, {CallID: "c3", Tool: "pay", Reason: "too\nmuch"}},
			Results: []steprec.Result{{CallID: "c2", Name: "pay", Arguments: `"not json"`, Content: "paid\n\nok"}},
			Answer:  `{"sum":5}`,
			State:   map[string]string{},
			Resumed: true,
		},
		{Step: 2, Tools: []string{"add"}, Cache: "transcript rewritten by commit (effect key:compact)",
			Request: &steprec.Request{System: sys, Tools: tools, Messages: first},
			Finish:  "tool_calls", Response: &steprec.Response{Message: call},
		},
		{Step: 2, Resumed: true, Interrupted: []string{"c1", "c5"},
			Response: &steprec.Response{Message: call},
			Results:  []steprec.Result{{CallID: "c1", Name: "add", Arguments: `{"a":2,"b":3}`, Content: "interrupted", IsError: true}},
			State:    map[string]string{"n": "5"},
		},
	}}
}

func TestRoundTrip(t *testing.T) {
	want := goldenRun()
	text := steprec.Write(want, steprec.WriteOptions{})
	got, err := steprec.Parse(text)
	require.NoError(t, err, "%s", text)
	assert.Empty(t, cmp.Diff(want, got), "mismatch (-want +got), text:\n%s", text)
	assert.Equal(t, string(text), string(steprec.Write(got, steprec.WriteOptions{})))
}

// TestGoldenFilesRoundTrip reads every golden step file of the module and
// writes it again: the text must come back byte for byte.
func TestGoldenFilesRoundTrip(t *testing.T) {
	n := 0
	for _, path := range goldenFiles(t) {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		run, err := steprec.Parse(data)
		require.NoError(t, err, path)
		assert.Equal(t, string(data), string(steprec.Write(run, steprec.WriteOptions{})), path)
		n++
	}
	assert.Greater(t, n, 10, "golden files found")
}

// TestWriteStep checks that WriteStep gives each step's sections as Write
// gives them in the whole file, for every record of every golden step file
// of the module and of goldenRun (a paused step, a resumed one).
func TestWriteStep(t *testing.T) {
	runs := map[string]*steprec.Run{"goldenRun": goldenRun()}
	for _, path := range goldenFiles(t) {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		run, err := steprec.Parse(data)
		require.NoError(t, err, path)
		runs[path] = run
	}
	n := 0
	for name, run := range runs {
		for i, s := range run.Steps {
			if s == nil {
				continue
			}
			want := cut(steprec.Write(&steprec.Run{Steps: run.Steps[:i+1]}, steprec.WriteOptions{}), s.Step)
			assert.Equal(t, want, steprec.WriteStep(run, i, steprec.WriteOptions{}), "%s: record %d (step %d)", name, i, s.Step)
			n++
		}
	}
	assert.Greater(t, n, 50, "records written")
	assert.Empty(t, steprec.WriteStep(goldenRun(), 99, steprec.WriteOptions{}), "WriteStep out of range")
}

// cut returns the sections of step n of a file's text.
func cut(text []byte, n int) string {
	var b strings.Builder
	in := false
	for line := range strings.Lines(string(text)) {
		if strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --\n") {
			name := strings.TrimPrefix(line, "-- ")
			in = strings.HasPrefix(name, fmt.Sprintf("step %d/", n)) || strings.HasPrefix(name, fmt.Sprintf("step %d decided/", n))
		}
		if in {
			b.WriteString(line)
		}
	}
	return b.String()
}

// goldenFiles returns the golden step files of the module (testdata
// files that start with the header).
func goldenFiles(t testing.TB) []string {
	var out []string
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".txtar") || !strings.Contains(filepath.ToSlash(path), "/testdata/") {
			return err
		}
		data, err := os.ReadFile(path)
		if err == nil && strings.HasPrefix(string(data), steprec.Header+"\n") {
			out = append(out, path)
		}
		return err
	})
	require.NoError(t, err)
	return out
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"header", "reprompt snapshot v0\n-- end --\nsteps: 0\n", "line 1: not a golden step file"},
		{"cut short", steprec.Header + "\n-- step 0/state --\nn: 1\n", "no end section"},
		{"unknown section", steprec.Header + "\n-- step 0/weather --\n-- end --\nsteps: 1\n", `line 2: section "step 0/weather": unknown section`},
		{"as in nothing", steprec.Header + "\n-- step 0/messages --\n[0] (as in step 3)\n-- end --\nsteps: 1\n", "line 3:"},
		{"bad field", steprec.Header + "\n-- step 0/reply --\ncolor: red\n-- end --\nsteps: 1\n", `unknown field "color"`},
		{"resumed without a line", steprec.Header + "\n-- step 0/resumed --\n-- end --\nsteps: 1\n", `section "step 0/resumed": want "interrupted`},
		{"resumed, bad call", steprec.Header + "\n-- step 0/resumed --\ninterrupted: a b\n-- end --\nsteps: 1\n", `want a call id, got "a b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := steprec.Parse([]byte(tc.text))
			var pe *steprec.ParseError
			require.ErrorAs(t, err, &pe)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestParsePartial cuts a golden file short and damages one: the error
// comes with the steps read before the damage.
func TestParsePartial(t *testing.T) {
	text := string(steprec.Write(goldenRun(), steprec.WriteOptions{}))
	second := strings.Index(text, "-- step 1/")
	require.Positive(t, second, "the text has no step 1:\n%s", text)
	inSecond := second + strings.Index(text[second:], "\n") + 1 // after step 1's first marker
	for _, tc := range []struct {
		name, text string
		steps      int
	}{
		{"cut in step 1", text[:inSecond+3], 2},
		{"cut before step 1", text[:second], 1},
		{"damaged in step 1", text[:second] + "-- step 1/reply --\ncolor: red\n" + text[second:], 2},
		{"nothing read", steprec.Header + "\n-- step 0/weather --\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, err := steprec.Parse([]byte(tc.text))
			var pe *steprec.ParseError
			require.ErrorAs(t, err, &pe)
			require.NotNil(t, run, "the steps read before the damage")
			require.Len(t, run.Steps, tc.steps, "steps read")
			assert.Equal(t, 0, run.Steps[0].Step, "the first step's number")
		})
	}
	run, err := steprec.Parse([]byte("reprompt snapshot v0\n"))
	assert.Error(t, err, "not a golden file")
	assert.Nil(t, run, "not a golden file: nothing read")
}

// FuzzParse checks that Parse never panics, and that what it reads it
// writes back as text that it reads to the same records.
func FuzzParse(f *testing.F) {
	for _, path := range goldenFiles(f) {
		data, err := os.ReadFile(path)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add(steprec.Write(goldenRun(), steprec.WriteOptions{}))
	f.Fuzz(func(t *testing.T, data []byte) {
		run, err := steprec.Parse(data)
		if err != nil {
			return
		}
		text := steprec.Write(run, steprec.WriteOptions{})
		again, err := steprec.Parse(text)
		require.NoError(t, err, "%s", text)
		require.Equal(t, string(text), string(steprec.Write(again, steprec.WriteOptions{})))
	})
}
