package viewer_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/cmd/reprompt/internal/showtext"
	"github.com/reprompt/reprompt/cmd/reprompt/internal/viewer"
	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
)

type noteArgs struct {
	Text string `json:"text"`
}

// researcher is a sub-agent that notes what it found.
func researcher(p *prompt.Prompt) error {
	prompt.DefTool(p, "note", "Note a finding.", func(ctx context.Context, a noteArgs) (string, error) {
		return "noted: " + a.Text, nil
	})
	return nil
}

// agent has state, a tool, a sub-agent, an effect that disables a tool,
// and one that compacts the transcript before step 3.
func agent(p *prompt.Prompt) error {
	n, setN := prompt.State(p, "count", 0)
	p.DefSystem("role", "You count.")
	prompt.DefTool(p, "add", "Add one.", func(ctx context.Context, _ struct{}) (int, error) {
		setN.Set(ctx, n+1)
		return n + 1, nil
	})
	done := prompt.DefTool(p, "done", "Stop.", func(ctx context.Context, _ struct{}) (string, error) { return "ok", nil })
	p.DefAgent("researcher", "Find things out.", researcher)
	p.Effect(effects.On(n), func(ctx context.Context, s *effects.Step) error {
		if n == 0 {
			done.Disable()
		}
		if n == 2 {
			msgs := s.Messages()
			s.CommitMessages(append([]defs.Message{msgs[0]}, msgs[len(msgs)-2:]...))
		}
		return nil
	})
	p.User("Count to two, then ask the researcher.")
	return nil
}

func script() *snapshots.Model {
	return snapshots.Script(
		snapshots.CallTool("add", nil),
		snapshots.CallTool("add", nil),
		snapshots.CallTool("researcher", prompt.AgentArgs{Task: "find X"}),
		snapshots.Text("X is 42."),
	).Agent("researcher",
		snapshots.CallTool("note", noteArgs{Text: "42"}),
		snapshots.Text("42"),
	)
}

// TestSourcesAgree runs one prompt into a store and into a golden file and
// reads both: the steps' requests, replies, tool calls, state and sub-agents
// agree, and the store's step records add effects, tokens and commits.
func TestSourcesAgree(t *testing.T) {
	st := session.NewMemory()
	res, err := runtime.Run(t.Context(), script(), agent, runtime.Config{Store: st, SessionID: "s"})
	require.NoError(t, err)
	fromStore, err := viewer.FromStore(t.Context(), st, "s")
	require.NoError(t, err)
	golden := snapshots.Format(res.Steps, nil)
	fromGolden, err := viewer.FromGolden("s.txtar", golden)
	require.NoError(t, err, "%s", golden)

	require.Len(t, fromStore.Steps, len(res.Steps))
	require.Len(t, fromGolden.Steps, len(res.Steps))
	assert.True(t, fromStore.Done)
	assert.True(t, fromGolden.Done)
	for i, s := range res.Steps {
		a, b := fromStore.Steps[i], fromGolden.Steps[i]
		assert.Equal(t, messages(s.Request().Messages), pool(fromStore, a.Request), "step %d: request from the store", i)
		assert.Equal(t, messages(s.Request().Messages), pool(fromGolden, b.Request), "step %d: request from the golden file", i)
		assert.Equal(t, fromStore.Messages[a.Reply], fromGolden.Messages[b.Reply], "step %d: reply", i)
		assert.Empty(t, cmp.Diff(a.Calls, b.Calls, cmpopts.IgnoreUnexported(viewer.ToolCall{}), cmpopts.IgnoreFields(viewer.ToolCall{}, "DurationMS")), "step %d: calls mismatch (-store +golden)", i)
		assert.Equal(t, a.State, b.State, "step %d: state", i)
		assert.Equal(t, a.Changes, b.Changes, "step %d: state changes", i)
		assert.Equal(t, a.Diff.Shared, b.Diff.Shared, "step %d: shared messages", i)
		assert.Equal(t, pool(fromStore, a.Diff.Added), pool(fromGolden, b.Diff.Added), "step %d: added messages", i)
		assert.Equal(t, pool(fromStore, a.Diff.Removed), pool(fromGolden, b.Diff.Removed), "step %d: removed messages", i)
		assert.Len(t, b.Diff.Rewritten, len(a.Diff.Rewritten), "step %d: rewritten messages", i)
		assert.Equal(t, a.Tools, b.Tools, "step %d: tools", i)
		assert.Equal(t, a.Disabled, b.Disabled, "step %d: disabled", i)
		assert.Equal(t, a.Commits, b.Commits, "step %d: commits", i)
		require.Len(t, a.Effects, len(b.Effects), "step %d: effects", i)
		for j := range a.Effects {
			assert.Equal(t, a.Effects[j].Reason, b.Effects[j].Reason, "step %d: effect %d", i, j)
			assert.True(t, strings.HasPrefix(a.Effects[j].Site, b.Effects[j].Site+":"), "step %d: site %q, golden's %q", i, a.Effects[j].Site, b.Effects[j].Site)
		}
		assert.Equal(t, s.InputTokens, a.InputTokens, "step %d: input tokens", i)
		assert.Equal(t, s.PrefixTokens, a.PrefixTokens, "step %d: prefix tokens", i)
		assert.False(t, a.Estimated)
	}
	// Step 1: the tool "done" is offered again; step 2: compaction.
	assert.Equal(t, []string{"done"}, fromStore.Steps[1].ToolsOn)
	assert.Equal(t, []viewer.Change{{Key: "count", Before: "1", After: "2"}}, fromStore.Steps[1].Changes)
	assert.True(t, fromStore.Steps[2].Compaction)
	assert.Equal(t, []viewer.Commit{{Before: 5, After: 3}}, fromStore.Steps[2].Commits)
	assert.Len(t, fromStore.Steps[2].Diff.Removed, 2, "the compaction removed a call and its result")
	assert.Equal(t, "deps[0]: 1 → 2", fromStore.Steps[2].Effects[0].Reason)

	// The sub-agent: its two steps, from the step record and from the file.
	for _, run := range []*viewer.Run{fromStore, fromGolden} {
		ag := run.Steps[2].Agents
		require.Len(t, ag, 1, run.Source)
		assert.Equal(t, "researcher", ag[0].Name)
		require.Len(t, ag[0].Steps, 2, run.Source)
		assert.Equal(t, "note", ag[0].Steps[0].Calls[0].Name, run.Source)
		assert.Equal(t, "42", run.Messages[ag[0].Steps[1].Reply].Content, run.Source)
	}
}

func messages(ms []defs.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, string(m.Role)+"|"+m.Content+"|"+m.ToolCallID)
	}
	return out
}

func pool(run *viewer.Run, idx []int) []string {
	var out []string
	for _, i := range idx {
		m := run.Messages[i]
		out = append(out, m.Role+"|"+m.Content+"|"+m.CallID)
	}
	return out
}

// TestOldCheckpoints reads a session saved without step records: tokens
// come from the provider's usage, commits from the generations.
func TestOldCheckpoints(t *testing.T) {
	st := &stripRecords{Store: session.NewMemory()}
	_, err := runtime.Run(t.Context(), script(), agent, runtime.Config{Store: st, SessionID: "old"})
	require.NoError(t, err)
	run, err := viewer.FromStore(t.Context(), st, "old")
	require.NoError(t, err)
	require.Len(t, run.Steps, 4)
	for _, s := range run.Steps {
		assert.True(t, s.Estimated)
		assert.Empty(t, s.Effects)
		assert.Positive(t, s.InputTokens)
	}
	assert.True(t, run.Steps[2].Compaction, "a new generation with fewer messages")
	assert.Contains(t, strings.Join(run.Notes, "\n"), "no step records")
}

// stripRecords saves checkpoints as a runtime before step records did.
type stripRecords struct{ session.Store }

func (s *stripRecords) Save(ctx context.Context, cp *session.Checkpoint) error {
	c := *cp
	c.Record = nil
	err := s.Store.Save(ctx, &c)
	cp.Seq, cp.Incarnation = c.Seq, c.Incarnation
	return err
}

// TestInterrupted reads a session whose run stopped in the middle of a step.
func TestInterrupted(t *testing.T) {
	st := session.NewMemory()
	_, err := runtime.Run(t.Context(), script(), agent, runtime.Config{Store: st, SessionID: "x", MaxSteps: 2})
	require.ErrorIs(t, err, runtime.ErrMaxSteps)
	cp, err := st.Latest(t.Context(), "x")
	require.NoError(t, err)
	cp.Done = false
	cp.Record = nil
	cp.Pending = &session.Pending{Reply: defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "c9", Name: "add", Arguments: []byte(`{}`)}}}}
	require.NoError(t, st.Save(t.Context(), cp))
	run, err := viewer.FromStore(t.Context(), st, "x")
	require.NoError(t, err)
	require.Len(t, run.Steps, 3)
	last := run.Steps[2]
	assert.Contains(t, last.Damage, "interrupted")
	assert.Equal(t, "(no result: the call had not completed)", last.Calls[0].Result)
}

func TestUnknownSession(t *testing.T) {
	_, err := viewer.FromStore(t.Context(), session.NewMemory(), "nope")
	var nf *session.NotFoundError
	require.True(t, errors.As(err, &nf), "%v", err)
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	for _, tt := range []struct {
		name, text, want string
	}{
		{"empty", "", `:1: not a golden step file (its first line is "", not "reprompt snapshot v1") nor a recording (JSON)`},
		{"text", "hello\nworld\n", `:1: not a golden step file (its first line is "hello", not "reprompt snapshot v1") nor a recording (JSON)`},
		{"json", `{"a": 1}`, `: not a recording: no "version" and "replies"`},
		{"bad json", `{"version": 1, "replies": [`, ": not a recording: unexpected EOF"},
		{"later recording", `{"version": 2, "replies": []}`, ": recording version 2, this viewer reads version 1"},
		{"cut short", "reprompt snapshot v1\n-- step 0/messages --\n[0] user\n", ": no end section: the file is cut short"},
		{"bad message", "reprompt snapshot v1\n-- step 0/messages --\n[0] user\n  content: hi\nnonsense\n-- end --\n", `:5: section "step 0/messages": want a message header "[i] role", got "nonsense"`},
		{"bad reference", "reprompt snapshot v1\n-- step 0/messages --\n[0-3] (as in step 0)\n-- end --\n", `:3: section "step 0/messages": "[0-3] (as in step 0)" refers to messages the previous step does not have`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := write(strings.ReplaceAll(tt.name, " ", "_"), tt.text)
			_, err := viewer.FromFile(path)
			var fe *viewer.FormatError
			require.True(t, errors.As(err, &fe), "%v", err)
			assert.Equal(t, path+tt.want, err.Error())
		})
	}
}

func TestHTML(t *testing.T) {
	st := session.NewMemory()
	_, err := runtime.Run(t.Context(), script(), agent, runtime.Config{Store: st, SessionID: "</script><b>"})
	require.NoError(t, err)
	run, err := viewer.FromStore(t.Context(), st, "</script><b>")
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, viewer.HTML(&b, run))
	page := b.String()
	assert.Contains(t, page, "<title>&lt;/script&gt;&lt;b&gt; · reprompt</title>")
	assert.Equal(t, 3, strings.Count(page, "</script>"), "the data cannot close its script elements")
	assert.Contains(t, page, `"title":"\u003c/script\u003e\u003cb\u003e"`)
	assert.NotContains(t, page, "{{")
}

// TestHTMLData checks the page's two data elements: what the timeline
// shows, and the steps in full with their messages, each gzipped in base64
// when large.
func TestHTMLData(t *testing.T) {
	st := session.NewMemory()
	_, err := runtime.Run(t.Context(), script(), agent, runtime.Config{Store: st, SessionID: "big"})
	require.NoError(t, err)
	run, err := viewer.FromStore(t.Context(), st, "big")
	require.NoError(t, err)
	run.Notes = append(run.Notes, strings.Repeat("a long note ", 60000)) // 720 KB
	var b bytes.Buffer
	require.NoError(t, viewer.HTML(&b, run))
	assert.Less(t, b.Len(), 100_000, "compressed")

	var sum struct {
		Title string   `json:"title"`
		Notes []string `json:"notes"`
		Steps []struct {
			N          int    `json:"n"`
			Input      int    `json:"input"`
			Compaction bool   `json:"compaction"`
			What       string `json:"what"`
		} `json:"steps"`
	}
	pageData(t, b.Bytes(), "run-data", "gzip-base64", &sum)
	assert.Equal(t, "big", sum.Title)
	require.Len(t, sum.Steps, 4)
	assert.Equal(t, "researcher", sum.Steps[2].What)
	assert.True(t, sum.Steps[2].Compaction)
	assert.Equal(t, run.Steps[1].InputTokens, sum.Steps[1].Input)

	var det struct {
		Steps []struct {
			N     int               `json:"n"`
			Set   map[string]string `json:"set"`
			Calls []struct {
				Res *int `json:"res"`
			} `json:"calls"`
		} `json:"steps"`
		Messages []viewer.Message `json:"messages"`
	}
	pageData(t, b.Bytes(), "run-detail", "json", &det)
	require.Len(t, det.Steps, 4)
	assert.Equal(t, map[string]string{"count": "2"}, det.Steps[1].Set, "a step's data holds the keys it changed")
	require.NotNil(t, det.Steps[0].Calls[0].Res, "a call's result is a message of the pool")
	assert.Equal(t, "1", det.Messages[*det.Steps[0].Calls[0].Res].Content)
}

// pageData decodes the data element id of a page, checking its encoding.
func pageData(t *testing.T, page []byte, id, encoding string, v any) {
	t.Helper()
	m := regexp.MustCompile(`<script id="` + id + `" type="application/json" data-encoding="([a-z0-9-]+)">([^<]*)</script>`).FindSubmatch(page)
	require.NotNil(t, m, "the page has no %s", id)
	require.Equal(t, encoding, string(m[1]), id)
	data := m[2]
	if encoding == "gzip-base64" {
		z, err := base64.StdEncoding.DecodeString(string(data))
		require.NoError(t, err)
		zr, err := gzip.NewReader(bytes.NewReader(z))
		require.NoError(t, err)
		data, err = io.ReadAll(zr)
		require.NoError(t, err)
	}
	require.NoError(t, json.Unmarshal(data, v))
}

// TestMarks checks that the step list marks the steps a crash or a stop
// cut short: show's step lines (a step's rule, a turn's folded steps) and
// the page's timeline data.
func TestMarks(t *testing.T) {
	run := func() *viewer.Run {
		return &viewer.Run{Title: "r", Source: "test", Steps: []*viewer.Step{
			{Number: 0, Reply: -1, Sent: []string{"Count."}},
			{Number: 1, Reply: -1, Resumed: true, Interrupted: []string{"c1"}},
			{Number: 2, Reply: -1},
			{Number: 3, Reply: -1, Stopped: "interrupted", Damage: "interrupted: the run stopped after the model's reply"},
		}}
	}
	paused := run()
	paused.Steps[3].Stopped, paused.Steps[3].Damage = "paused", ""
	for _, tt := range []struct {
		name string
		run  *viewer.Run
		want []string // the line of each step, by the start of each
	}{
		{"interrupted", run(), []string{"── step 0 ──", "── step 1 [crashed, resumed] ──", "── step 2 ──", "── step 3 [interrupted] ──"}},
		{"paused", paused, []string{"── step 0 ──", "── step 1 [crashed, resumed] ──", "── step 2 ──", "── step 3 [paused] ──"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			require.NoError(t, showtext.Write(&b, tt.run, showtext.Options{Steps: true}))
			var got []string
			for l := range strings.Lines(b.String()) {
				if strings.HasPrefix(l, "── step ") {
					got = append(got, l[:strings.LastIndex(l, " ──")+len(" ──")])
				}
			}
			assert.Empty(t, cmp.Diff(tt.want, got), "show --steps: step lines (-want +got)")

			b.Reset()
			require.NoError(t, showtext.Write(&b, tt.run, showtext.Options{}))
			folds := map[int]string{}
			for l := range strings.Lines(b.String()) {
				var n int
				if _, err := fmt.Sscanf(l, "    step %d", &n); err == nil {
					folds[n] = l
				}
			}
			assert.NotContains(t, folds[0], "crashed", "show: step 0's line")
			assert.Contains(t, folds[1], " · crashed, resumed", "show: step 1's line")
			assert.Contains(t, folds[3], " · "+tt.run.Steps[3].Stopped, "show: step 3's line")

			var page bytes.Buffer
			require.NoError(t, viewer.HTML(&page, tt.run))
			var sum struct {
				Steps []struct {
					N       int    `json:"n"`
					Stopped string `json:"stopped"`
					Resumed bool   `json:"resumed"`
				} `json:"steps"`
			}
			pageData(t, page.Bytes(), "run-data", "json", &sum)
			require.Len(t, sum.Steps, 4, "the timeline's steps")
			assert.True(t, sum.Steps[1].Resumed, "the timeline's step 1: resumed")
			assert.Equal(t, tt.run.Steps[3].Stopped, sum.Steps[3].Stopped, "the timeline's step 3: stopped")
			assert.False(t, sum.Steps[0].Resumed || sum.Steps[0].Stopped != "", "the timeline's step 0: no mark")
		})
	}
}
