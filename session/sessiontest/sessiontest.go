// Package sessiontest checks that a session.Store follows the rules of
// package session, as testing/slogtest does for slog handlers.
//
// Call Run from a test of the store, with a function that returns a new,
// empty store each time it is called:
//
//	func TestConformance(t *testing.T) {
//		sessiontest.Run(t, func(t *testing.T) session.Store {
//			st, err := mystore.Open(filepath.Join(t.TempDir(), "db"))
//			require.NoError(t, err)
//			t.Cleanup(func() { st.Close() })
//			return st
//		})
//	}
//
// A store that can be damaged from the test (rows truncated or removed, a
// head rewritten) passes WithDamage, and Run then checks that every damage
// is reported as a typed error, never as a panic or a wrong checkpoint.
//
// A store that implements session.StepReader has its AtSteps checked
// against AtStep, step by step, on sessions with generations, rewinds,
// pending and damaged checkpoints; for a store without it, session.AtSteps
// (which then calls AtStep) is checked the same way.
//
// A store that implements session.Inbox has its posts checked: numbered
// in the order sent, per session, read back after a cursor that never
// skips one, under concurrent posters and saves; refused for a session
// the store does not hold, and deleted with the session.
//
// A store that implements RowCounter has its row count checked too: a
// session whose every save is a new generation rewriting only its last
// messages (Checkpoint.Base) must store rows in proportion to its length.
package sessiontest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/session"
)

// Damage is a way to corrupt a stored session.
type Damage int

const (
	// TruncateMessage cuts the stored form of the last message of the
	// latest checkpoint in half.
	TruncateMessage Damage = iota
	// GarbleMessage replaces the stored form of that message with bytes
	// that are not JSON.
	GarbleMessage
	// DropMessage removes that message.
	DropMessage
	// TruncateHead cuts the stored head of the latest checkpoint in half.
	TruncateHead
	// FutureHead rewrites the latest head as if a later version of the
	// format had written it.
	FutureHead
	// HugeCount rewrites the latest head to name 10^15 messages: more than
	// can be allocated.
	HugeCount
	// LargeCount rewrites the latest head to name 4·10^8 messages: enough
	// to exhaust memory if allocated.
	LargeCount
)

// Damages lists every Damage.
var Damages = []Damage{TruncateMessage, GarbleMessage, DropMessage, TruncateHead, FutureHead, HugeCount, LargeCount}

func (d Damage) String() string {
	switch d {
	case TruncateMessage:
		return "TruncateMessage"
	case GarbleMessage:
		return "GarbleMessage"
	case DropMessage:
		return "DropMessage"
	case TruncateHead:
		return "TruncateHead"
	case FutureHead:
		return "FutureHead"
	case HugeCount:
		return "HugeCount"
	case LargeCount:
		return "LargeCount"
	}
	return fmt.Sprintf("Damage(%d)", int(d))
}

// OnHead reports whether d damages the head (else: the last message).
func (d Damage) OnHead() bool {
	return d == TruncateHead || d == FutureHead || d == HugeCount || d == LargeCount
}

// Apply returns data damaged as d says. For DropMessage the caller removes
// the row instead; Apply returns nil.
func (d Damage) Apply(data []byte) []byte {
	switch d {
	case TruncateMessage, TruncateHead:
		return append([]byte(nil), data[:len(data)/2]...)
	case GarbleMessage:
		return []byte("\x00\xffnot json")
	case FutureHead:
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			panic(fmt.Sprintf("sessiontest: FutureHead: head is not a JSON object: %v", err))
		}
		m["version"] = json.RawMessage(fmt.Sprint(session.Version + 1))
		m["field_from_the_future"] = json.RawMessage(`{"x":1}`)
		b, _ := json.Marshal(m)
		return b
	case HugeCount, LargeCount:
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			panic(fmt.Sprintf("sessiontest: %v: head is not a JSON object: %v", d, err))
		}
		m["messages"] = json.RawMessage("1000000000000000")
		if d == LargeCount {
			m["messages"] = json.RawMessage("400000000")
		}
		b, _ := json.Marshal(m)
		return b
	}
	return nil
}

// RowCounter is implemented by stores that can tell how many message rows
// they hold for a session, in all its generations. Run uses it, when the
// store implements it, to check that a new generation with a Base stores
// only the messages from its Base on.
type RowCounter interface {
	Rows(ctx context.Context, id string) (int, error)
}

// Option configures Run.
type Option func(*config)

type config struct {
	damage func(t *testing.T, st session.Store, id string, d Damage)
}

// WithDamage lets Run corrupt what a store holds: damage must apply d to
// session id's latest checkpoint in st: to its stored head when d.OnHead(),
// else to the stored row of the last message of that checkpoint's
// generation (removing it for DropMessage), using d.Apply.
func WithDamage(damage func(t *testing.T, st session.Store, id string, d Damage)) Option {
	return func(c *config) { c.damage = damage }
}

// Run checks the store that newStore returns against the rules of package
// session. newStore is called once per subtest, possibly from parallel
// subtests, and must return a new, empty store.
func Run(t *testing.T, newStore func(t *testing.T) session.Store, opts ...Option) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, st session.Store)
	}{
		{"NotFound", testNotFound},
		{"RoundTrip", testRoundTrip},
		{"Incremental", testIncremental},
		{"Generation", testGeneration},
		{"RewriteTail", testRewriteTail},
		{"RewindLineage", testRewindLineage},
		{"Rules", testRules},
		{"Rewind", testRewind},
		{"AtStepPrefersStepStart", testAtStepPending},
		{"LargeMessages", testLarge},
		{"RawArguments", testRawArguments},
		{"Approvals", testApprovals},
		{"Concurrent", testConcurrent},
		{"ListDelete", testListDelete},
		{"Canceled", testCanceled},
		{"StepRecords", testStepRecords},
		{"AtSteps", testAtSteps},
		{"Recreated", testRecreated},
		{"RetiredCallIDs", testRetiredCallIDs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newStore(t))
		})
	}
	for _, tt := range inboxTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := newStore(t)
			in, ok := st.(session.Inbox)
			if !ok {
				t.Skip("the store does not implement session.Inbox")
			}
			tt.fn(t, st, in)
		})
	}
	t.Run("Corrupt", func(t *testing.T) {
		if c.damage == nil {
			t.Skip("the store gave no WithDamage hook")
		}
		for _, d := range Damages {
			t.Run(d.String(), func(t *testing.T) {
				t.Parallel()
				testCorrupt(t, newStore(t), c.damage, d)
			})
		}
	})
}

// Fixture returns a checkpoint of session id that sets every field, with a
// transcript of n messages (n ≥ 1) of every role.
func Fixture(id string, n int) *session.Checkpoint {
	cp := &session.Checkpoint{
		SessionID:    id,
		Step:         3,
		State:        json.RawMessage(`{"count":30,"notes":["a","b"],"nested":{"ok":true}}`),
		Effects:      json.RawMessage(`{"slots":[{"ran":true,"deps":["\"x\"","1"]},{"ran":false}],"keyed":{"summary":{"ran":true,"deps":["[1,2]"]}}}`),
		SeenMessages: []string{"user:hello", "system:be brief"},
		Pending: &session.Pending{
			Reply: defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{
				{ID: "p1", Name: "read", Arguments: json.RawMessage(`{"path":"a.txt"}`)},
				{ID: "p2", Name: "write", Arguments: json.RawMessage(`{"path":"b.txt"}`)},
			}},
			Results:   []defs.ToolResult{{CallID: "p1", Name: "read", Arguments: json.RawMessage(`{"path":"a.txt"}`), Content: "contents"}},
			Offered:   []string{"read", "write"},
			Approvals: []session.Approval{{CallID: "p2", Decision: session.Approved, Started: true}},
		},
		Stats: session.Stats{Steps: 3, InputTokens: 1200, OutputTokens: 340, CachedTokens: 800, Cost: 0.0123456789, ElapsedNS: 1_500_000_000},
		Extra: map[string]json.RawMessage{"summary": json.RawMessage(`{"text":"so far","upto":4}`)},
		Record: &session.StepRecord{
			Version: session.RecordVersion, Step: 2,
			Effects: []effects.Ran{{ID: "#0", Site: "agent.go:12", Phase: effects.BeforeCall, Reason: effects.Reason{
				Kind: effects.ReasonChanged, Changes: []effects.Change{{Index: 0, Name: "count", From: "1", To: "2"}}}}},
			Disabled: []string{"tool:write"}, Reminded: []string{"variable:tasks"}, Tools: []string{"read", "lookup"},
			System: "5f1d", InputTokens: 410, PrefixTokens: 380, BilledInput: 68,
			Usage: session.Usage{InputTokens: 400, OutputTokens: 12, CachedTokens: 256}, Finish: "tool_calls",
			Calls:   []session.CallRecord{{ID: "call-1", Name: "lookup", DurationNS: 1200, Error: "boom"}},
			Commits: []session.CommitRecord{{Before: 40, After: 12}}, Recovered: true, Summaries: 1,
			Agents: []session.AgentRecord{{CallID: "call-1", Name: "helper", Error: "failed",
				Steps: []session.StepRecord{{Version: session.RecordVersion, Reply: "done", Calls: []session.CallRecord{{ID: "a", Name: "b"}}}}}},
			DurationNS: 5_000_000, Resumed: true, Interrupted: []string{"call-2"},
		},
	}
	cp.Transcript = Messages(0, n)
	return cp
}

// Messages returns n messages for positions from, from+1, …: a user
// message, an assistant message calling a tool, the tool's result, and an
// assistant answer, repeated, so that a prefix ending on a tool result is a
// valid transcript.
func Messages(from, n int) []defs.Message {
	out := make([]defs.Message, n)
	for i := range out {
		k := from + i
		switch k % 4 {
		case 0:
			out[i] = defs.Message{Role: defs.RoleUser, Content: fmt.Sprintf("question %d: «ünïcødé» \"quoted\" \n\t<tag>", k)}
		case 1:
			out[i] = defs.Message{Role: defs.RoleAssistant, Reasoning: "thinking", ToolCalls: []defs.ToolCall{
				{ID: fmt.Sprintf("call-%d", k), Name: "lookup", Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, k))},
			}}
		case 2:
			out[i] = defs.Message{Role: defs.RoleTool, ToolCallID: fmt.Sprintf("call-%d", k-1), Name: "lookup", Content: fmt.Sprint("result ", k), IsError: k%8 == 2, Meta: map[string]string{"trimmed": "true"}}
		case 3:
			out[i] = defs.Message{Role: defs.RoleAssistant, Content: fmt.Sprint("answer ", k)}
		}
	}
	return out
}

func save(t *testing.T, st session.Store, cp *session.Checkpoint) {
	t.Helper()
	seq := cp.Seq
	require.NoError(t, st.Save(context.Background(), cp), "Save(%q, seq %d, step %d)", cp.SessionID, seq, cp.Step)
	require.Equal(t, seq+1, cp.Seq, "Save(%q): Seq = %d, want %d", cp.SessionID, cp.Seq, seq+1)
}

func latest(t *testing.T, st session.Store, id string) *session.Checkpoint {
	t.Helper()
	cp, err := st.Latest(context.Background(), id)
	require.NoError(t, err, "Latest(%q)", id)
	return cp
}

func atStep(t *testing.T, st session.Store, id string, step int) *session.Checkpoint {
	t.Helper()
	cp, err := st.AtStep(context.Background(), id, step)
	require.NoError(t, err, "AtStep(%q, %d)", id, step)
	return cp
}

// same fails the test unless got is the checkpoint want as saved.
func same(t *testing.T, what string, want, got *session.Checkpoint) {
	t.Helper()
	w, g := normalize(want), normalize(got)
	w.Version = want.FormatVersion()
	w.Base = 0 // a loaded checkpoint has Base 0
	if !reflect.DeepEqual(w, g) {
		// Their JSON's first difference: clearer than a dump of both.
		wb, _ := json.MarshalIndent(w, "", " ")
		gb, _ := json.MarshalIndent(g, "", " ")
		require.Failf(t, "checkpoint mismatch", "%s: %s", what, firstDiff(string(wb), string(gb)))
	}
}

func normalize(cp *session.Checkpoint) session.Checkpoint {
	c := *cp
	if len(c.Transcript) == 0 {
		c.Transcript = nil
	}
	if len(c.SeenMessages) == 0 {
		c.SeenMessages = nil
	}
	if len(c.Extra) == 0 {
		c.Extra = nil
	}
	if len(c.State) == 0 {
		c.State = nil
	}
	c.Effects = canonicalJSON(c.Effects)
	return c
}

// canonicalJSON returns raw with its object keys sorted and no space, as a
// store that keeps JSON in its own form (PostgreSQL's jsonb) may give it
// back; nil for an empty value or object.
func canonicalJSON(raw json.RawMessage) json.RawMessage {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return raw
	}
	if m, ok := v.(map[string]any); v == nil || ok && len(m) == 0 {
		return nil
	}
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}

func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("first difference at line %d of the JSON:\n-want %s\n+got  %s", i+1, trim(w), trim(g))
		}
	}
	return "(no difference in JSON; a nil/empty or float difference)"
}

func trim(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

func isNotFound(t *testing.T, err error, id string) {
	t.Helper()
	require.ErrorIs(t, err, session.ErrNotFound, "err = %v, want one matching session.ErrNotFound", err)
	nf, ok := errors.AsType[*session.NotFoundError](err)
	require.True(t, ok, "err = %#v, want a *session.NotFoundError for %q", err, id)
	require.Equal(t, id, nf.ID, "err = %#v, want a *session.NotFoundError for %q", err, id)
}

func testNotFound(t *testing.T, st session.Store) {
	ctx := context.Background()
	_, err := st.Latest(ctx, "nope")
	isNotFound(t, err, "nope")
	_, err = st.AtStep(ctx, "nope", 0)
	isNotFound(t, err, "nope")
	require.NoError(t, st.Delete(ctx, "nope"), "Delete of an unknown session")
	infos, err := st.List(ctx)
	require.NoError(t, err, "List of an empty store = %v, %v; want none", infos, err)
	require.Empty(t, infos, "List of an empty store = %v, %v; want none", infos, err)
	cp := Fixture("s", 4)
	cp.Step = 1
	save(t, st, cp)
	_, err = st.AtStep(ctx, "s", 2)
	isNotFound(t, err, "s")
	nf, _ := errors.AsType[*session.NotFoundError](err)
	require.True(t, nf.AtStep, "AtStep of a missing step: %#v, want AtStep and Step 2", nf)
	require.Equal(t, 2, nf.Step, "AtStep of a missing step: %#v, want AtStep and Step 2", nf)
}

func testRoundTrip(t *testing.T, st session.Store) {
	cp := Fixture("round-trip", 9)
	save(t, st, cp)
	same(t, "Latest", cp, latest(t, st, "round-trip"))
	same(t, "AtStep", cp, atStep(t, st, "round-trip", cp.Step))

	// A minimal checkpoint: nothing but an id, then no messages at all.
	bare := &session.Checkpoint{SessionID: "minimal"}
	save(t, st, bare)
	same(t, "Latest of a minimal checkpoint", bare, latest(t, st, "minimal"))

	// Done is kept.
	cp.Pending = nil
	cp.Done = true
	cp.Step++
	save(t, st, cp)
	same(t, "Latest after Done", cp, latest(t, st, "round-trip"))
}

func testIncremental(t *testing.T, st session.Store) {
	const steps = 150
	cp := Fixture("inc", 1)
	cp.Step, cp.Pending = 0, nil
	var saved []*session.Checkpoint
	for i := range steps {
		cp.Step = i + 1
		cp.Transcript = append(cp.Transcript, Messages(len(cp.Transcript), 2)...)
		cp.Stats.Steps = i + 1
		cp.State = json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))
		save(t, st, cp)
		c := *cp
		c.Transcript = append([]defs.Message(nil), cp.Transcript...)
		saved = append(saved, &c)
		if i%37 == 0 {
			same(t, fmt.Sprintf("Latest after step %d", i), cp, latest(t, st, "inc"))
		}
	}
	same(t, "Latest", cp, latest(t, st, "inc"))
	for _, step := range []int{1, 2, 50, 149, steps} {
		same(t, fmt.Sprintf("AtStep(%d)", step), saved[step-1], atStep(t, st, "inc", step))
	}
	got := latest(t, st, "inc").Seq
	require.Equal(t, int64(steps), got, "Seq after %d saves = %d", steps, got)
}

func testGeneration(t *testing.T, st session.Store) {
	cp := Fixture("gen", 2)
	cp.Step, cp.Pending = 0, nil
	var before *session.Checkpoint
	for i := range 10 {
		cp.Step = i + 1
		cp.Transcript = append(cp.Transcript, Messages(len(cp.Transcript), 2)...)
		save(t, st, cp)
		if cp.Step == 5 {
			c := *cp
			c.Transcript = append([]defs.Message(nil), cp.Transcript...)
			before = &c
		}
	}
	// Compaction: a summary replaces all but the last two messages.
	tail := cp.Transcript[len(cp.Transcript)-2:]
	cp.Transcript = append([]defs.Message{{Role: defs.RoleUser, Content: "[summary of 20 messages]", Meta: map[string]string{"summary": "1"}}}, tail...)
	cp.Generation++
	cp.Step++
	save(t, st, cp)
	same(t, "Latest after a rewrite", cp, latest(t, st, "gen"))
	for range 5 {
		cp.Step++
		cp.Transcript = append(cp.Transcript, Messages(100+len(cp.Transcript), 2)...)
		save(t, st, cp)
	}
	same(t, "Latest after growing the new generation", cp, latest(t, st, "gen"))
	same(t, "AtStep of the old generation", before, atStep(t, st, "gen", 5))

	// A second rewrite to a shorter transcript.
	cp.Generation++
	cp.Step++
	cp.Transcript = cp.Transcript[:1]
	save(t, st, cp)
	same(t, "Latest after a second rewrite", cp, latest(t, st, "gen"))
}

// rewriteTail returns tr with its last k messages rewritten (a new value of
// each, marked with rev) and add new messages appended, without modifying
// tr.
func rewriteTail(tr []defs.Message, k, add, rev int) []defs.Message {
	out := append([]defs.Message(nil), tr...)
	for j := max(0, len(out)-k); j < len(out); j++ {
		m := out[j]
		m.Content = fmt.Sprintf("message %d as rewritten by revision %d", j, rev)
		m.Meta = map[string]string{"rev": fmt.Sprint(rev)}
		out[j] = m
	}
	return append(out, Messages(len(out), add)...)
}

func snapshot(cp *session.Checkpoint) *session.Checkpoint {
	c := *cp
	c.Transcript = append([]defs.Message(nil), cp.Transcript...)
	return &c
}

// testRewriteTail saves a session whose every checkpoint is a new
// generation sharing all but the last 3 messages with the previous one (as
// the runtime's context effects do at every step) and checks that every
// checkpoint loads exactly as saved and that the rows stored grow linearly.
func testRewriteTail(t *testing.T, st session.Store) {
	const saves = 200
	ctx := context.Background()
	cp := Fixture("tail", 6)
	cp.Pending = nil
	cp.Step = 0
	save(t, st, cp)
	saved := []*session.Checkpoint{snapshot(cp)}
	for i := 1; i < saves; i++ {
		prev := len(cp.Transcript)
		cp.Transcript = rewriteTail(cp.Transcript, 3, 2, i)
		cp.Generation++
		cp.Base = prev - 3
		cp.Step = i
		cp.Stats.Steps = i
		save(t, st, cp)
		saved = append(saved, snapshot(cp))
		if i%41 == 0 {
			same(t, fmt.Sprintf("Latest after save %d", i), cp, latest(t, st, "tail"))
		}
	}
	same(t, "Latest", cp, latest(t, st, "tail"))
	for step, want := range saved {
		same(t, fmt.Sprintf("AtStep(%d)", step), want, atStep(t, st, "tail", step))
	}
	rc, ok := st.(RowCounter)
	if !ok {
		t.Log("the store does not implement RowCounter: rows not counted")
		return
	}
	rows, err := rc.Rows(ctx, "tail")
	require.NoError(t, err, "Rows")
	n := len(cp.Transcript)
	t.Logf("%d saves, %d messages: %d rows stored", saves, n, rows)
	limit := 4*n + saves
	require.LessOrEqual(t, rows, limit, "%d saves of a transcript of %d messages stored %d rows, want at most %d: a new generation with a Base must store only the messages from its Base on", saves, n, rows, limit)
	// Exactly: the first save's messages, then 5 per save.
	want := 6 + 5*(saves-1)
	require.Equal(t, want, rows, "%d rows stored, want %d", rows, want)
}

// testRewindLineage rewinds a session of generations with a Base and
// continues it with more of them, in a new generation and within one, and
// checks that both branches load exactly.
func testRewindLineage(t *testing.T, st session.Store) {
	ctx := context.Background()
	const id = "lineage"
	cp := Fixture(id, 4)
	cp.Pending = nil
	cp.Step = 0
	save(t, st, cp)
	old := map[int]*session.Checkpoint{0: snapshot(cp)}
	for step := 1; step <= 20; step++ {
		prev := len(cp.Transcript)
		switch {
		case step%7 == 0:
			// An append within the generation between two rewrites.
			cp.Transcript = append(cp.Transcript, Messages(prev, 1)...)
			cp.Base = 0
		case step == 9:
			// A full rewrite in the middle: a new root.
			cp.Transcript = rewriteTail(cp.Transcript, prev, 2, step)
			cp.Generation++
			cp.Base = 0
		default:
			cp.Transcript = rewriteTail(cp.Transcript, 3, 2, step)
			cp.Generation++
			cp.Base = prev - 3
		}
		cp.Step = step
		save(t, st, cp)
		old[step] = snapshot(cp)
	}
	rw, err := session.Rewind(ctx, st, id, 12)
	require.NoError(t, err, "Rewind")
	require.Equal(t, 0, rw.Base, "Rewind: Base %d, Seq %d, Generation %d; want 0, %d and %d", rw.Base, rw.Seq, rw.Generation, cp.Seq, cp.Generation+1)
	require.Equal(t, cp.Seq, rw.Seq, "Rewind: Base %d, Seq %d, Generation %d; want 0, %d and %d", rw.Base, rw.Seq, rw.Generation, cp.Seq, cp.Generation+1)
	require.Equal(t, cp.Generation+1, rw.Generation, "Rewind: Base %d, Seq %d, Generation %d; want 0, %d and %d", rw.Base, rw.Seq, rw.Generation, cp.Seq, cp.Generation+1)
	at12 := *old[12]
	at12.Seq, at12.Generation = rw.Seq, rw.Generation
	same(t, "Rewind(12)", &at12, rw)
	branch := map[int]*session.Checkpoint{}
	for step := 13; step <= 16; step++ {
		rw.Step = step
		switch step {
		case 13: // the rewound checkpoint's first save: Base 0
			rw.Transcript = append(rw.Transcript, defs.UserMessage("on the new branch"))
		case 15: // an append within the generation
			rw.Transcript = append(rw.Transcript, defs.AssistantMessage("same generation"))
			rw.Base = 0
		default:
			prev := len(rw.Transcript)
			rw.Transcript = rewriteTail(rw.Transcript, 3, 2, 100+step)
			rw.Generation++
			rw.Base = prev - 3
		}
		save(t, st, rw)
		branch[step] = snapshot(rw)
	}
	same(t, "Latest on the new branch", rw, latest(t, st, id))
	for step := 0; step <= 20; step++ {
		want := old[step]
		what := fmt.Sprintf("AtStep(%d), abandoned branch", step)
		if b := branch[step]; b != nil {
			want, what = b, fmt.Sprintf("AtStep(%d), new branch", step)
		} else if step <= 12 {
			what = fmt.Sprintf("AtStep(%d), before the rewind", step)
		}
		same(t, what, want, atStep(t, st, id, step))
	}
}

func testRules(t *testing.T, st session.Store) {
	ctx := context.Background()
	cp := Fixture("rules", 6)
	save(t, st, cp)
	want := *cp
	want.Transcript = append([]defs.Message(nil), cp.Transcript...)

	refused := func(what string, c *session.Checkpoint, check func(error) bool) {
		t.Helper()
		seq := c.Seq
		err := st.Save(ctx, c)
		require.Error(t, err, "%s: Save error = %v", what, err)
		require.True(t, check(err), "%s: Save error = %v", what, err)
		require.Equal(t, seq, c.Seq, "%s: a refused Save changed Seq from %d to %d", what, seq, c.Seq)
		same(t, what+": Latest after a refused Save", &want, latest(t, st, "rules"))
	}
	conflict := func(err error) bool { _, ok := errors.AsType[*session.ConflictError](err); return ok }
	invalid := func(err error) bool { _, ok := errors.AsType[*session.InvalidError](err); return ok }

	stale := *cp
	stale.Seq = 0
	refused("a second first save", &stale, conflict)
	stale.Seq = 7
	refused("a Seq from the future", &stale, conflict)

	lower := *cp
	lower.Generation = -1
	refused("a lower generation", &lower, invalid)

	shorter := *cp
	shorter.Transcript = cp.Transcript[:3]
	refused("a shorter transcript in the same generation", &shorter, invalid)

	// Base: only in the generation after the latest one, and within both
	// transcripts.
	based := func(gen, base int, transcript []defs.Message) *session.Checkpoint {
		c := *cp
		c.Generation, c.Base, c.Transcript = gen, base, transcript
		return &c
	}
	longer := append(append([]defs.Message(nil), cp.Transcript...), Messages(6, 2)...)
	refused("a base in the same generation", based(0, 2, longer), invalid)
	refused("a negative base", based(1, -1, longer), invalid)
	refused("a base after a skipped generation", based(2, 2, longer), invalid)
	refused("a base beyond the transcript", based(1, 3, cp.Transcript[:2]), invalid)
	refused("a base beyond the latest transcript", based(1, 7, longer), invalid)
	first := Fixture("rules-first", 3)
	first.Base = 1
	err := st.Save(ctx, first)
	require.Error(t, err, "first Save with a base: want an *InvalidError")
	require.True(t, invalid(err), "first Save with a base: %v, want an *InvalidError", err)
	_, err = st.Latest(ctx, "rules-first")
	require.ErrorIs(t, err, session.ErrNotFound, "a refused first Save left a session behind: %v", err)

	err = st.Save(ctx, &session.Checkpoint{})
	require.Error(t, err, "Save without a session id: want an *InvalidError")
	require.True(t, invalid(err), "Save without a session id: %v, want an *InvalidError", err)
	badState := Fixture("bad-state", 1)
	badState.State = json.RawMessage(`{"unterminated`)
	require.Error(t, st.Save(ctx, badState), "Save with state that is not JSON succeeded")
	_, err = st.Latest(ctx, "bad-state")
	require.ErrorIs(t, err, session.ErrNotFound, "a refused first Save left a session behind: %v", err)

	// The same checkpoint again (nothing new) is fine and gets the next Seq.
	save(t, st, cp)
	want.Seq = cp.Seq
	same(t, "Latest after an unchanged save", &want, latest(t, st, "rules"))
}

func testRewind(t *testing.T, st session.Store) {
	ctx := context.Background()
	cp := Fixture("rw", 1)
	cp.Pending = nil
	var at3 *session.Checkpoint
	for i := range 6 {
		cp.Step = i + 1
		cp.Transcript = append(cp.Transcript, Messages(len(cp.Transcript), 2)...)
		save(t, st, cp)
		if cp.Step == 3 {
			c := *cp
			c.Transcript = append([]defs.Message(nil), cp.Transcript...)
			at3 = &c
		}
	}
	rw, err := session.Rewind(ctx, st, "rw", 3)
	require.NoError(t, err, "Rewind")
	require.Equal(t, cp.Seq, rw.Seq, "Rewind: Seq %d Generation %d, want %d and %d", rw.Seq, rw.Generation, cp.Seq, cp.Generation+1)
	require.Equal(t, cp.Generation+1, rw.Generation, "Rewind: Seq %d Generation %d, want %d and %d", rw.Seq, rw.Generation, cp.Seq, cp.Generation+1)
	require.Len(t, rw.Transcript, len(at3.Transcript), "Rewind: %d messages, want %d", len(rw.Transcript), len(at3.Transcript))
	// Continue differently.
	for rw.Step < 5 {
		rw.Step++
		rw.Transcript = append(rw.Transcript, defs.UserMessage(fmt.Sprint("branch ", rw.Step)), defs.AssistantMessage("ok"))
		save(t, st, rw)
	}
	same(t, "Latest after a rewind", rw, latest(t, st, "rw"))
	same(t, "AtStep(5) after a rewind: the new branch", rw, atStep(t, st, "rw", 5))
	same(t, "AtStep(3) after a rewind", at3, atStep(t, st, "rw", 3))
	// The abandoned branch's checkpoints stay loadable as they were.
	got := atStep(t, st, "rw", 6)
	require.Len(t, got.Transcript, len(cp.Transcript), "abandoned step 6: %d messages, want %d", len(got.Transcript), len(cp.Transcript))
}

func testAtStepPending(t *testing.T, st session.Store) {
	cp := Fixture("pend", 3)
	cp.Step, cp.Pending = 2, nil
	save(t, st, cp)
	start := *cp
	// Step 2 runs: its reply and then each tool result are checkpointed.
	reply := Fixture("x", 1).Pending.Reply
	for i := range 3 {
		cp.Pending = &session.Pending{Reply: reply}
		for j := range i {
			cp.Pending.Results = append(cp.Pending.Results, defs.ToolResult{CallID: reply.ToolCalls[j].ID, Content: "ok"})
		}
		save(t, st, cp)
	}
	same(t, "AtStep(2) with pending checkpoints after the step's start", &start, atStep(t, st, "pend", 2))
	// Only pending checkpoints for step 3: the last one.
	cp.Step = 3
	for i := range 2 {
		cp.Pending = &session.Pending{Reply: reply, Results: []defs.ToolResult{{CallID: fmt.Sprint(i), Content: "r"}}}
		save(t, st, cp)
	}
	same(t, "AtStep(3) with only pending checkpoints", cp, atStep(t, st, "pend", 3))
	same(t, "Latest with a pending step", cp, latest(t, st, "pend"))
}

func testLarge(t *testing.T, st session.Store) {
	cp := Fixture("large", 4)
	big := strings.Repeat("0123456789abcdef\u00e9\"\\\n", 1<<16) // ~1.3 MiB
	cp.Transcript = append(cp.Transcript, defs.UserMessage(big))
	cp.Transcript = append(cp.Transcript, defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{
		{ID: "big", Name: "write", Arguments: jsonObject("data", big[:200_000])},
	}})
	cp.Transcript = append(cp.Transcript, defs.Message{Role: defs.RoleTool, ToolCallID: "big", Content: big})
	cp.State = jsonObject("blob", big[:300_000])
	save(t, st, cp)
	same(t, "Latest with large messages", cp, latest(t, st, "large"))
}

func jsonObject(key, value string) json.RawMessage {
	b, err := json.Marshal(map[string]string{key: value})
	if err != nil {
		panic(err)
	}
	return b
}

func testConcurrent(t *testing.T, st session.Store) {
	const writers, steps = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			id := fmt.Sprintf("concurrent-%d", w)
			cp := Fixture(id, 1)
			cp.Pending = nil
			for i := range steps {
				cp.Step = i + 1
				cp.Transcript = append(cp.Transcript, Messages(len(cp.Transcript), 2)...)
				if err := st.Save(context.Background(), cp); err != nil {
					errs <- fmt.Errorf("%s step %d: %w", id, i, err)
					return
				}
				if _, err := st.Latest(context.Background(), id); err != nil {
					errs <- fmt.Errorf("%s Latest: %w", id, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	if t.Failed() {
		return
	}
	for w := range writers {
		id := fmt.Sprintf("concurrent-%d", w)
		cp := latest(t, st, id)
		require.Equal(t, int64(steps), cp.Seq, "%s: seq %d, %d messages", id, cp.Seq, len(cp.Transcript))
		require.Len(t, cp.Transcript, 1+2*steps, "%s: seq %d, %d messages", id, cp.Seq, len(cp.Transcript))
		require.Equal(t, id, cp.SessionID, "%s: seq %d, %d messages", id, cp.Seq, len(cp.Transcript))
		want := Messages(0, 1+2*steps)
		require.Equal(t, want, cp.Transcript, "%s: transcript differs", id)
	}
	infos, err := st.List(context.Background())
	require.NoError(t, err, "List: %d sessions, %v; want %d", len(infos), err, writers)
	require.Len(t, infos, writers, "List: %d sessions, %v; want %d", len(infos), err, writers)
}

func testListDelete(t *testing.T, st session.Store) {
	ctx := context.Background()
	start := time.Now().Add(-time.Second)
	incarnations := map[string]int64{}
	for i, id := range []string{"b", "a", "c"} {
		cp := Fixture(id, 2)
		cp.Step = 10 + i
		cp.Done = id == "c"
		save(t, st, cp)
		require.NotZero(t, cp.Incarnation, "Incarnation set by the first Save of %q", id)
		if id == "a" {
			cp.Step = 20
			save(t, st, cp)
		}
		incarnations[id] = cp.Incarnation
	}
	infos, err := st.List(ctx)
	require.NoError(t, err, "List")
	want := []session.Info{{ID: "a", Seq: 2, Step: 20, Incarnation: incarnations["a"]}, {ID: "b", Seq: 1, Step: 10, Incarnation: incarnations["b"]}, {ID: "c", Seq: 1, Step: 12, Done: true, Incarnation: incarnations["c"]}}
	require.Len(t, infos, len(want), "List = %+v, want %+v", infos, want)
	for i, in := range infos {
		require.False(t, in.Updated.Before(start), "List[%d].Updated = %v, not the time of the save", i, in.Updated)
		require.False(t, in.Updated.After(time.Now().Add(time.Minute)), "List[%d].Updated = %v, not the time of the save", i, in.Updated)
		in.Updated = time.Time{}
		require.Equal(t, want[i], in, "List[%d] = %+v, want %+v", i, in, want[i])
	}
	require.NoError(t, st.Delete(ctx, "a"), "Delete")
	_, err = st.Latest(ctx, "a")
	isNotFound(t, err, "a")
	_, err = st.AtStep(ctx, "a", 10)
	isNotFound(t, err, "a")
	infos, _ = st.List(ctx)
	require.Len(t, infos, 2, "List after Delete = %+v", infos)
	require.Equal(t, "b", infos[0].ID, "List after Delete = %+v", infos)
	require.Equal(t, "c", infos[1].ID, "List after Delete = %+v", infos)
	b := Fixture("b", 2)
	b.Step, b.Seq, b.Incarnation = 10, 1, incarnations["b"]
	same(t, "another session after Delete", b, latest(t, st, "b"))

	// A deleted id starts over.
	cp := Fixture("a", 3)
	save(t, st, cp)
	same(t, "a deleted id saved again", cp, latest(t, st, "a"))
}

// testRecreated: a worker that loaded a session before it was deleted
// cannot write into the session created again under its id, even once
// that reaches the worker's Seq; Latest, AtStep, Stat and Rewind carry
// the session's incarnation.
func testRecreated(t *testing.T, st session.Store) {
	ctx := context.Background()
	old := Fixture("again", 2)
	save(t, st, old)
	save(t, st, old)
	require.NotZero(t, old.Incarnation, "Incarnation set by the first Save")
	stale := latest(t, st, "again") // worker A, at seq 2
	assert.Equal(t, old.Incarnation, stale.Incarnation, "Latest: Incarnation")
	require.NoError(t, st.Delete(ctx, "again"), "Delete")

	// Run B creates the session again and reaches A's seq.
	cp := Fixture("again", 3)
	save(t, st, cp)
	assert.NotEqual(t, old.Incarnation, cp.Incarnation, "Incarnation of the session created again")
	cp.Step++
	save(t, st, cp)
	require.Equal(t, stale.Seq, cp.Seq, "the new session's Seq")

	stale.Step++
	err := st.Save(ctx, stale)
	ce, ok := errors.AsType[*session.ConflictError](err)
	require.True(t, ok, "Save of a checkpoint of the deleted session = %v, want a *session.ConflictError", err)
	assert.True(t, ce.Recreated, "ConflictError.Recreated: %v", err)
	same(t, "the session created again after a stale Save", cp, latest(t, st, "again"))
	in, err := st.Stat(ctx, "again")
	require.NoError(t, err, "Stat")
	assert.Equal(t, cp.Incarnation, in.Incarnation, "Stat: Incarnation")
	assert.Equal(t, cp.Incarnation, atStep(t, st, "again", cp.Step).Incarnation, "AtStep: Incarnation")

	// The owner goes on, and so does a rewind of its session.
	cp.Step++
	save(t, st, cp)
	rw, err := session.Rewind(ctx, st, "again", 3)
	require.NoError(t, err, "Rewind")
	assert.Equal(t, cp.Incarnation, rw.Incarnation, "Rewind: Incarnation")
	save(t, st, rw)
	// A checkpoint that does not carry the incarnation over is refused.
	rw.Incarnation = 0
	_, ok = errors.AsType[*session.ConflictError](st.Save(ctx, rw))
	assert.True(t, ok, "Save without the session's incarnation: want a *session.ConflictError")
}

// testRetiredCallIDs: the retired call ids come back from Latest, AtStep
// and AtSteps as each checkpoint had them, across new generations with and
// without a Base and a Rewind; a shorter list in the same lineage is
// refused.
func testRetiredCallIDs(t *testing.T, st session.Store) {
	ctx := context.Background()
	cp := Fixture("retired", 2)
	cp.Pending = nil
	cp.Step = 1
	save(t, st, cp) // none
	var want [][]string
	want = append(want, nil)
	for step := 2; step <= 6; step++ {
		cp.Step = step
		if step%2 == 0 { // a commit retires calls: a new generation with a Base
			cp.RetiredCallIDs = append(slices.Clone(cp.RetiredCallIDs), fmt.Sprintf("call_%d_a", step), fmt.Sprintf("call_%d_b", step))
			cp.Generation++
			cp.Base = len(cp.Transcript) - 1
			cp.Transcript = append(slices.Clone(cp.Transcript[:cp.Base]), defs.AssistantMessage(fmt.Sprint("summary ", step)))
		} else {
			cp.Base = 0
			cp.Transcript = append(cp.Transcript, defs.UserMessage(fmt.Sprint("more ", step)))
		}
		save(t, st, cp)
		want = append(want, slices.Clone(cp.RetiredCallIDs))
		got := latest(t, st, "retired")
		assert.Equal(t, cp.RetiredCallIDs, got.RetiredCallIDs, "Latest at step %d: RetiredCallIDs", step)
		assert.Equal(t, cp.FormatVersion(), got.Version, "Latest at step %d: Version", step)
	}
	for i, w := range want {
		step := i + 1
		assert.Equal(t, w, atStep(t, st, "retired", step).RetiredCallIDs, "AtStep(%d): RetiredCallIDs", step)
	}
	step := 1
	for got, err := range session.AtSteps(ctx, st, "retired", 1, len(want)) {
		require.NoError(t, err, "AtSteps, step %d", step)
		assert.Equal(t, want[step-1], got.RetiredCallIDs, "AtSteps, step %d: RetiredCallIDs", step)
		step++
	}

	short := latest(t, st, "retired")
	short.RetiredCallIDs = short.RetiredCallIDs[:1]
	short.Step++
	_, ok := errors.AsType[*session.InvalidError](st.Save(ctx, short))
	assert.True(t, ok, "Save of fewer retired call ids in the same generation: want a *session.InvalidError")

	// A rewind starts a lineage with the list of its step; the later
	// checkpoints of the abandoned one keep theirs.
	rw, err := session.Rewind(ctx, st, "retired", 3)
	require.NoError(t, err, "Rewind")
	assert.Equal(t, want[2], rw.RetiredCallIDs, "Rewind to step 3: RetiredCallIDs")
	rw.RetiredCallIDs = append(rw.RetiredCallIDs, "after_rewind")
	save(t, st, rw)
	assert.Equal(t, rw.RetiredCallIDs, latest(t, st, "retired").RetiredCallIDs, "Latest after Rewind: RetiredCallIDs")
	rw.Step++
	rw.RetiredCallIDs = append(rw.RetiredCallIDs, "after_rewind_2")
	save(t, st, rw)
	assert.Equal(t, rw.RetiredCallIDs, latest(t, st, "retired").RetiredCallIDs, "Latest after Rewind: RetiredCallIDs")
	assert.Equal(t, want[5], atStep(t, st, "retired", 6).RetiredCallIDs, "AtStep(6) of the abandoned lineage: RetiredCallIDs")
}

func testCanceled(t *testing.T, st session.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cp := Fixture("canceled", 2)
	require.ErrorIs(t, st.Save(ctx, cp), context.Canceled, "Save with a canceled context")
	_, err := st.Latest(context.Background(), "canceled")
	require.ErrorIs(t, err, session.ErrNotFound, "a canceled Save left a session: %v", err)
	_, err = st.Latest(ctx, "canceled")
	require.Error(t, err, "Latest with a canceled context succeeded")
}

// RawArguments are tool-call arguments as models may send them, each of
// which a store must give back byte for byte: not JSON, not UTF-8, JSON
// that encoding/json would compact or escape, and the empty cases.
var RawArguments = []json.RawMessage{
	json.RawMessage(`{"a":`),
	json.RawMessage("{\"a\":\"\xff\xfe\"}"),
	json.RawMessage("\xff"),
	json.RawMessage(`{ "a" : 1,` + "\n\t" + `"b": [1, 2] }`),
	json.RawMessage(`{"s":"<b>&amp;</b>` + "\u2028" + `"}`),
	json.RawMessage(`"{\"a\":"`), // a JSON string that reads as arguments not JSON
	json.RawMessage(`null`),
	json.RawMessage(`{"raw_arguments":{"0":"AA=="}}`),
	json.RawMessage(``),
	nil,
}

// testRawArguments checks that tool-call arguments are kept as received, in
// the transcript and in a pending reply and its results, across saves.
func testRawArguments(t *testing.T, st session.Store) {
	calls := make([]defs.ToolCall, len(RawArguments))
	var results []defs.ToolResult
	for i, a := range RawArguments {
		calls[i] = defs.ToolCall{ID: fmt.Sprint("raw-", i), Name: "lookup", Arguments: a}
		results = append(results, defs.ToolResult{CallID: calls[i].ID, Name: "lookup", Arguments: a, Content: "ok"})
	}
	cp := Fixture("raw-args", 2)
	cp.Transcript = append(cp.Transcript, defs.Message{Role: defs.RoleAssistant, ToolCalls: calls})
	for _, c := range calls {
		cp.Transcript = append(cp.Transcript, defs.Message{Role: defs.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: "ok"})
	}
	cp.Pending = &session.Pending{Reply: defs.Message{Role: defs.RoleAssistant, ToolCalls: calls}, Results: results}
	save(t, st, cp)
	check := func(what string, got *session.Checkpoint) {
		t.Helper()
		for i, want := range RawArguments {
			a := got.Transcript[2].ToolCalls[i].Arguments
			require.True(t, bytes.Equal(a, want), "%s: arguments of call %d in the transcript = %q (nil %t), want %q (nil %t)", what, i, a, a == nil, want, want == nil)
			require.Equal(t, want == nil, a == nil, "%s: arguments of call %d in the transcript = %q (nil %t), want %q (nil %t)", what, i, a, a == nil, want, want == nil)
			a = got.Pending.Reply.ToolCalls[i].Arguments
			require.True(t, bytes.Equal(a, want), "%s: arguments of call %d in the pending reply = %q, want %q", what, i, a, want)
			require.Equal(t, want == nil, a == nil, "%s: arguments of call %d in the pending reply = %q, want %q", what, i, a, want)
			a = got.Pending.Results[i].Arguments
			require.True(t, bytes.Equal(a, want), "%s: arguments of pending result %d = %q, want %q", what, i, a, want)
		}
		same(t, what, cp, got)
	}
	check("Latest", latest(t, st, "raw-args"))
	// A later save stores only new messages: the stored ones still load.
	cp.Pending = nil
	cp.Step++
	cp.Transcript = append(cp.Transcript, defs.AssistantMessage("done"))
	save(t, st, cp)
	got := latest(t, st, "raw-args")
	for i, want := range RawArguments {
		a := got.Transcript[2].ToolCalls[i].Arguments
		require.True(t, bytes.Equal(a, want), "after a second save: arguments of call %d = %q, want %q", i, a, want)
		require.Equal(t, want == nil, a == nil, "after a second save: arguments of call %d = %q, want %q", i, a, want)
	}
	same(t, "Latest after a second save", cp, got)
}

func testCorrupt(t *testing.T, st session.Store, damage func(*testing.T, session.Store, string, Damage), d Damage) {
	ctx := context.Background()
	cp := Fixture("victim", 5)
	cp.Step = 1
	save(t, st, cp)
	cp.Step = 2
	cp.Transcript = append(cp.Transcript, Messages(5, 3)...)
	save(t, st, cp)
	other := Fixture("bystander", 5)
	save(t, st, other)

	damage(t, st, "victim", d)
	sameSteps(t, st, "victim", -1, 3)

	var err error
	require.NotPanics(t, func() { _, err = st.Latest(ctx, "victim") }, "Latest of a damaged session panicked")
	if d == FutureHead {
		ve, ok := errors.AsType[*session.VersionError](err)
		require.True(t, ok, "Latest of a head from a later version: %#v, want a *session.VersionError for %q, Got %d, Max %d", err, "victim", session.Version+1, session.Version)
		require.Equal(t, session.Version+1, ve.Got, "Latest of a head from a later version: %#v, want a *session.VersionError for %q, Got %d, Max %d", err, "victim", session.Version+1, session.Version)
		require.Equal(t, session.Version, ve.Max, "Latest of a head from a later version: %#v, want a *session.VersionError for %q, Got %d, Max %d", err, "victim", session.Version+1, session.Version)
		require.Equal(t, "victim", ve.ID, "Latest of a head from a later version: %#v, want a *session.VersionError for %q, Got %d, Max %d", err, "victim", session.Version+1, session.Version)
	} else {
		ce, ok := errors.AsType[*session.CorruptError](err)
		require.True(t, ok, "Latest of a damaged session: %#v (%v), want a *session.CorruptError for %q seq 2", err, err, "victim")
		require.Equal(t, "victim", ce.ID, "Latest of a damaged session: %#v (%v), want a *session.CorruptError for %q seq 2", err, err, "victim")
		require.Equal(t, int64(2), ce.Seq, "Latest of a damaged session: %#v (%v), want a *session.CorruptError for %q seq 2", err, err, "victim")
		require.ErrorIs(t, err, session.ErrCorrupt, "Latest of a damaged session: %#v (%v), want a *session.CorruptError for %q seq 2", err, err, "victim")
	}
	// The other session is untouched.
	same(t, "an undamaged session", other, latest(t, st, "bystander"))
	// Earlier checkpoints that do not need the damaged part still load.
	if !d.OnHead() {
		// Step 1 holds 5 messages; the damage hit message 7.
		cp1 := atStep(t, st, "victim", 1)
		require.Len(t, cp1.Transcript, 5, "checkpoint before the damage: %d messages", len(cp1.Transcript))
	}
	// Stat does not decode the damaged checkpoint, so a session can be
	// rewound past it and go on.
	in, err := st.Stat(ctx, "victim")
	require.NoError(t, err, "Stat of a damaged session = %+v, %v; want seq 2, step 2", in, err)
	require.Equal(t, int64(2), in.Seq, "Stat of a damaged session = %+v, %v; want seq 2, step 2", in, err)
	require.Equal(t, 2, in.Step, "Stat of a damaged session = %+v, %v; want seq 2, step 2", in, err)
	require.Equal(t, "victim", in.ID, "Stat of a damaged session = %+v, %v; want seq 2, step 2", in, err)
	rw, err := session.Rewind(ctx, st, "victim", 1)
	require.NoError(t, err, "Rewind past a damaged latest checkpoint")
	rw.Step = 3
	rw.Transcript = append(rw.Transcript, Messages(5, 1)...)
	save(t, st, rw)
	same(t, "the checkpoint saved after a rewind past damage", rw, latest(t, st, "victim"))
	sameSteps(t, st, "victim", 0, 4)
}

// testApprovals checks a step paused for approvals: the awaiting calls,
// each decision and the start of an approved call are kept by every save,
// reported with format version 2, found by AtStep, and an inconsistent
// approval is refused.
func testApprovals(t *testing.T, st session.Store) {
	ctx := context.Background()
	cp := Fixture("approve", 3)
	cp.Step, cp.Pending = 2, nil
	save(t, st, cp)
	reply := defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{
		{ID: "a", Name: "read", Arguments: json.RawMessage(`{"path":"a.txt"}`)},
		{ID: "b", Name: "pay", Arguments: json.RawMessage(`{"amount":500}`)},
		{ID: "c", Name: "pay", Arguments: json.RawMessage(`{"amount":900}`)},
	}}
	read := defs.ToolResult{CallID: "a", Name: "read", Arguments: reply.ToolCalls[0].Arguments, Content: "contents"}
	cp.Pending = &session.Pending{Reply: reply, Results: []defs.ToolResult{read}, Offered: []string{"read", "pay"},
		Approvals: []session.Approval{{CallID: "b"}, {CallID: "c"}}}
	save(t, st, cp)
	got := latest(t, st, "approve")
	same(t, "Latest with calls awaiting approval", cp, got)
	require.Equal(t, 2, got.Version, "Latest with approvals: Version = %d, want 2", got.Version)
	// Deny one, approve the other, start it.
	cp.Pending.Approvals[1].Decision = session.Denied
	cp.Pending.Results = append(cp.Pending.Results, defs.ToolResult{CallID: "c", Name: "pay", Arguments: reply.ToolCalls[2].Arguments, Content: "too much", IsError: true})
	save(t, st, cp)
	cp.Pending.Approvals[0].Decision = session.Approved
	save(t, st, cp)
	cp.Pending.Approvals[0].Started = true
	save(t, st, cp)
	same(t, "Latest with decisions and a started call", cp, latest(t, st, "approve"))
	// The step completes: version 1 again.
	cp.Pending = nil
	cp.Step = 3
	cp.Transcript = append(cp.Transcript, Messages(3, 1)...)
	save(t, st, cp)
	got = latest(t, st, "approve")
	require.Equal(t, 1, got.Version, "Latest after the step completed: Version %d, Pending %v; want 1, nil", got.Version, got.Pending)
	require.Nil(t, got.Pending, "Latest after the step completed: Version %d, Pending %v; want 1, nil", got.Version, got.Pending)
	// Inconsistent approvals are refused.
	bad := []struct {
		name      string
		approvals []session.Approval
	}{
		{"unknown call", []session.Approval{{CallID: "zzz"}}},
		{"twice", []session.Approval{{CallID: "b"}, {CallID: "b"}}},
		{"unknown decision", []session.Approval{{CallID: "b", Decision: "maybe"}}},
		{"started awaiting", []session.Approval{{CallID: "b", Started: true}}},
		{"started denied", []session.Approval{{CallID: "b", Decision: session.Denied, Started: true}}},
	}
	for _, b := range bad {
		next := *cp
		next.Pending = &session.Pending{Reply: reply, Approvals: b.approvals}
		err := st.Save(ctx, &next)
		var invalid *session.InvalidError
		assert.ErrorAs(t, err, &invalid, "Save with approvals %s: %v, want a *session.InvalidError", b.name, err)
	}
}

// testStepRecords checks that the record of each step is kept with the
// checkpoint that ends it, and that checkpoints without one load without.
func testStepRecords(t *testing.T, st session.Store) {
	const id = "records"
	cp := &session.Checkpoint{SessionID: id, Transcript: Messages(0, 1)}
	save(t, st, cp) // the start of step 0: no record
	for step := range 3 {
		cp.Transcript = append(cp.Transcript, Messages(len(cp.Transcript), 3)...)
		cp.Pending = &session.Pending{Reply: defs.Message{Role: defs.RoleAssistant, Content: "mid-step"}}
		cp.Record = nil
		save(t, st, cp) // mid-step: no record
		cp.Pending = nil
		cp.Step = step + 1
		cp.Record = &session.StepRecord{Version: session.RecordVersion, Step: step, InputTokens: 100 * (step + 1),
			Calls: []session.CallRecord{{ID: fmt.Sprint("call-", step), Name: "lookup", DurationNS: int64(step + 1)}}}
		save(t, st, cp)
	}
	got := atStep(t, st, id, 0).Record
	require.Nil(t, got, "AtStep(0).Record = %+v, want nil: the first checkpoint has none", got)
	for step := range 3 {
		got := atStep(t, st, id, step+1).Record
		require.NotNil(t, got, "AtStep(%d).Record = %+v, want the record of step %d", step+1, got, step)
		require.Equal(t, step, got.Step, "AtStep(%d).Record = %+v, want the record of step %d", step+1, got, step)
		require.Equal(t, 100*(step+1), got.InputTokens, "AtStep(%d).Record = %+v, want the record of step %d", step+1, got, step)
		require.Len(t, got.Calls, 1, "AtStep(%d).Record = %+v, want the record of step %d", step+1, got, step)
		require.Equal(t, int64(step+1), got.Calls[0].DurationNS, "AtStep(%d).Record = %+v, want the record of step %d", step+1, got, step)
	}
	got = latest(t, st, id).Record
	require.NotNil(t, got, "Latest().Record = %+v, want the record of step 2", got)
	require.Equal(t, 2, got.Step, "Latest().Record = %+v, want the record of step 2", got)
}

// sameSteps fails the test unless session.AtSteps yields, for each step of
// session id from first to last, exactly what AtStep returns.
func sameSteps(t *testing.T, st session.Store, id string, first, last int) {
	t.Helper()
	ctx := context.Background()
	step := first
	for got, gotErr := range session.AtSteps(ctx, st, id, first, last) {
		require.LessOrEqual(t, step, last, "AtSteps(%q, %d, %d) yielded more than %d steps", id, first, last, last-first+1)
		want, wantErr := st.AtStep(ctx, id, step)
		switch {
		case wantErr != nil || gotErr != nil:
			require.Equal(t, wantErr, gotErr, "AtSteps(%q, %d, %d), step %d: error %#v (%v), AtStep's %#v (%v)", id, first, last, step, gotErr, gotErr, wantErr, wantErr)
			require.Nil(t, got, "AtSteps(%q, %d, %d), step %d: a checkpoint beside the error %v", id, first, last, step, gotErr)
		case !reflect.DeepEqual(want, got):
			wb, _ := json.MarshalIndent(want, "", " ")
			gb, _ := json.MarshalIndent(got, "", " ")
			require.Failf(t, "checkpoint mismatch", "AtSteps(%q, %d, %d), step %d: checkpoint mismatch with AtStep's: %s", id, first, last, step, firstDiff(string(wb), string(gb)))
		}
		step++
	}
	require.Equal(t, last+1, step, "AtSteps(%q, %d, %d) ended after %d steps, want %d", id, first, last, step-first, last-first+1)
}

// testAtSteps checks StepReader.AtSteps (through session.AtSteps) against
// AtStep on a session with generations sharing rows, compactions, pending
// checkpoints, a step without checkpoint and a rewind, then its edges: an
// unknown session, a canceled context, a loop that stops early, and
// transcripts that share messages.
func testAtSteps(t *testing.T, st session.Store) {
	ctx := context.Background()
	if _, ok := st.(session.StepReader); !ok {
		t.Log("the store does not implement session.StepReader: session.AtSteps calls AtStep")
	}
	const id = "steps"
	cp := &session.Checkpoint{SessionID: id, State: json.RawMessage(`{"step":0}`)}
	save(t, st, cp) // step 0, no messages
	reply := Fixture("x", 1).Pending.Reply
	for step := 1; step <= 30; step++ {
		prev := len(cp.Transcript)
		if step%4 == 2 { // the step's reply, before its tool calls
			cp.Pending = &session.Pending{Reply: reply}
			save(t, st, cp)
			cp.Pending = nil
		}
		switch {
		case step%10 == 0: // compaction: a new root
			cp.Transcript = rewriteTail(cp.Transcript[:prev/2], prev/2, 1, step)
			cp.Generation++
			cp.Base = 0
		case step%3 == 0 && prev > 2: // rewrite the tail
			cp.Transcript = rewriteTail(cp.Transcript, 2, 3, step)
			cp.Generation++
			cp.Base = prev - 2
		default:
			cp.Transcript = append(cp.Transcript, Messages(prev, 3)...)
			cp.Base = 0
		}
		cp.Step = step
		if step == 17 {
			cp.Step = 18 // no checkpoint at step 17
		}
		cp.State = json.RawMessage(fmt.Sprintf(`{"step":%d}`, step))
		cp.Record = &session.StepRecord{Version: session.RecordVersion, Step: step - 1}
		if step == 23 { // interrupted: only pending checkpoints
			cp.Pending, cp.Record = &session.Pending{Reply: reply}, nil
		}
		save(t, st, cp)
		cp.Pending, cp.Base = nil, 0
	}
	sameSteps(t, st, id, -2, 33)
	rw, err := session.Rewind(ctx, st, id, 12)
	require.NoError(t, err, "Rewind")
	for step := 13; step <= 15; step++ {
		prev := len(rw.Transcript)
		rw.Step = step
		if step == 14 {
			rw.Transcript = rewriteTail(rw.Transcript, 2, 1, 100+step)
			rw.Generation++
			rw.Base = prev - 2
		} else {
			rw.Transcript = append(rw.Transcript, defs.UserMessage(fmt.Sprint("branch ", step)))
		}
		save(t, st, rw)
		rw.Base = 0
	}
	sameSteps(t, st, id, 0, 30)
	sameSteps(t, st, id, 14, 14)
	sameSteps(t, st, id, 20, 40)
	for range session.AtSteps(ctx, st, id, 5, 4) {
		require.Fail(t, "AtSteps(5, 4) yielded a step")
	}

	// The transcripts may share messages, but appending to one does not
	// change another.
	var cps []*session.Checkpoint
	for cp, err := range session.AtSteps(ctx, st, id, 1, 4) {
		require.NoError(t, err, "AtSteps(1, 4)")
		cps = append(cps, cp)
	}
	for _, cp := range cps {
		cp.Transcript = append(cp.Transcript, defs.UserMessage("appended"))
	}
	for i, cp := range cps {
		want := atStep(t, st, id, 1+i)
		want.Transcript = append(want.Transcript, defs.UserMessage("appended"))
		require.Equal(t, want, cp, "AtSteps(1, 4), step %d, after appending to each transcript: not AtStep's checkpoint plus the message appended", 1+i)
	}

	// A loop that stops early.
	n := 0
	for range session.AtSteps(ctx, st, id, 0, 30) {
		n++
		if n == 3 {
			break
		}
	}

	// An unknown session: its *NotFoundError, for every step yielded.
	n = 0
	for cp, err := range session.AtSteps(ctx, st, "nope", 0, 5) {
		n++
		require.Nil(t, cp, "AtSteps of an unknown session yielded a checkpoint")
		isNotFound(t, err, "nope")
		nf, _ := errors.AsType[*session.NotFoundError](err)
		require.False(t, nf.AtStep, "AtSteps of an unknown session: %#v, want the session's error, not a step's", nf)
	}
	require.NotZero(t, n, "AtSteps of an unknown session yielded nothing")

	// A canceled context ends the sequence with its error.
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	var last error
	n = 0
	for cp, err := range session.AtSteps(canceled, st, id, 0, 30) {
		n++
		require.False(t, err == nil && cp == nil, "AtSteps with a canceled context yielded neither a checkpoint nor an error")
		last = err
	}
	require.NotZero(t, n, "AtSteps with a canceled context: %d pairs, the last error %v; want it to end with context.Canceled", n, last)
	require.LessOrEqual(t, n, 31, "AtSteps with a canceled context: %d pairs, the last error %v; want it to end with context.Canceled", n, last)
	require.ErrorIs(t, last, context.Canceled, "AtSteps with a canceled context: %d pairs, the last error %v; want it to end with context.Canceled", n, last)
}
