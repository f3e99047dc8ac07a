package viewer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/cmd/reprompt/internal/viewer"
	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/internal/pgtest"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/postgres"
	"github.com/reprompt/reprompt/session/sqlite"
)

// longSession saves into st a session of the shape of
// examples/longsession's: steps steps, each checkpointed after the model's
// reply, after its tool result and at its end (with a step record); at two
// steps of three the tool result before the last is trimmed (a new
// generation sharing all but the last messages, Base), every 25th step
// compacts the transcript to a summary and the last 6 messages (a new
// generation), and the state holds the last 100 files touched.
func longSession(b *testing.B, st session.Store, id string, steps int) {
	ctx := context.Background()
	save := func(cp *session.Checkpoint) {
		require.NoError(b, st.Save(ctx, cp))
		cp.Base = 0
	}
	body := strings.Repeat("func f() { return g(x) } // line of a file\n", 36)
	cp := &session.Checkpoint{SessionID: id, Transcript: []defs.Message{
		defs.UserMessage("The tests in internal/ fail since the last refactoring. Find out why and fix them."),
	}}
	save(cp)
	var files []string
	for step := range steps {
		file := fmt.Sprintf("internal/pkg%d/file%d.go", step%7, step%41)
		files = append(files, file)
		files = files[max(0, len(files)-100):] // the last 100
		state, _ := json.Marshal(map[string]any{"modified": files, "step": step})
		cp.State = state
		call := defs.ToolCall{ID: fmt.Sprint("call-", step), Name: "read_file", Arguments: json.RawMessage(fmt.Sprintf(`{"path":%q}`, file))}
		reply := defs.Message{Role: defs.RoleAssistant, Content: fmt.Sprint("Reading ", file, "."), ToolCalls: []defs.ToolCall{call}}
		result := defs.Message{Role: defs.RoleTool, ToolCallID: call.ID, Name: call.Name, Content: body}

		cp.Pending = &session.Pending{Reply: reply, Offered: []string{"read_file", "write_file"}}
		save(cp)
		cp.Pending.Results = []defs.ToolResult{{CallID: call.ID, Name: call.Name, Arguments: call.Arguments, Content: body}}
		save(cp)
		cp.Pending = nil

		prev := len(cp.Transcript)
		var commits []session.CommitRecord
		switch {
		case step%25 == 24 && prev > 8:
			summary := defs.Message{Role: defs.RoleUser, Content: fmt.Sprintf("[summary of %d messages]", prev-7), Meta: map[string]string{"summary": "1"}}
			cp.Transcript = append([]defs.Message{cp.Transcript[0], summary}, cp.Transcript[prev-6:]...)
			cp.Generation++
			commits = append(commits, session.CommitRecord{Before: prev, After: len(cp.Transcript)})
		case step%3 != 0 && prev > 3:
			tr := append([]defs.Message(nil), cp.Transcript...)
			tr[prev-1].Content = "[trimmed]"
			tr[prev-1].Meta = map[string]string{"trimmed": "true"}
			cp.Transcript = tr
			cp.Generation++
			cp.Base = prev - 1
			commits = append(commits, session.CommitRecord{Before: prev, After: prev})
		}
		cp.Transcript = append(cp.Transcript, reply, result)
		cp.Step = step + 1
		cp.Stats.Steps = step + 1
		cp.Stats.InputTokens += 7000
		cp.Record = &session.StepRecord{Version: session.RecordVersion, Step: step, Tools: []string{"read_file", "write_file"},
			InputTokens: 7000, PrefixTokens: 5000, Usage: session.Usage{InputTokens: 7000, OutputTokens: 40},
			Effects: []effects.Ran{{ID: "trim_tool_results#0", Site: "main.go:306", Phase: effects.BeforeCall}},
			Calls:   []session.CallRecord{{ID: call.ID, Name: call.Name, DurationNS: 1000}}, Commits: commits, Finish: "tool_calls"}
		save(cp)
		cp.Record = nil
	}
	cp.Done = true
	save(cp)
}

// BenchmarkFromStore reads a 1,000-step session (longSession) of SQLite,
// and of PostgreSQL when REPROMPT_PG_URL names a server, in one pass
// (session.StepReader) and one step at a time (AtStep for each step, as
// stores without AtSteps are read).
func BenchmarkFromStore(b *testing.B) {
	const steps = 1000
	b.Run("sqlite", func(b *testing.B) {
		st, err := sqlite.Open(filepath.Join(b.TempDir(), "long.db"))
		require.NoError(b, err)
		defer st.Close()
		longSession(b, st, "long", steps)
		benchmarkFromStore(b, st, "long", steps)
	})
	b.Run("postgres", func(b *testing.B) {
		url := pgtest.URL(b)
		st, err := postgres.Open(context.Background(), url)
		require.NoError(b, err)
		defer st.Close()
		id := fmt.Sprintf("viewer-bench-%d", time.Now().UnixNano())
		defer st.Delete(context.Background(), id)
		longSession(b, st, id, steps)
		benchmarkFromStore(b, st, id, steps)
	})
}

func benchmarkFromStore(b *testing.B, st session.Store, id string, steps int) {
	for _, bb := range []struct {
		name string
		st   session.Store
	}{
		{"OnePass", st},
		{"AtStep", stepStore{st}},
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				run, err := viewer.FromStore(context.Background(), bb.st, id)
				require.NoError(b, err)
				// A bool and a constant message: the check must not allocate
				// inside the measured loop.
				require.True(b, len(run.Steps) == steps, "FromStore read fewer or more steps than were saved")
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*steps), "µs/step")
		})
	}
}
