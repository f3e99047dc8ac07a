package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/sessiontest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDecodeHeadErrors checks the errors of heads that do not decode, in
// the order DecodeHead checks: the version first (a later one is a
// *VersionError even when the rest does not decode), then the fields,
// worded as decoding a head words them.
func TestDecodeHeadErrors(t *testing.T) {
	for _, tt := range []struct {
		head, want string
	}{
		{`{"version":1,"session_id":"s","seq":1,"step":"two"}`, "head: json: cannot unmarshal string into Go struct field head.step of type int"},
		{`{"version":9,"session_id":"s","seq":1,"step":"two"}`, "checkpoint format version 9 is newer than the newest this program reads (3)"},
		{`{"version":"1","session_id":"s","seq":1}`, "head: json: cannot unmarshal string into Go struct field .version of type int"},
		{`{"session_id":"s","seq":1,"step":"two"}`, "head: no version"},
		{`{"version":0,"session_id":"s","seq":1}`, "head: invalid version 0"},
		{`{"version":1,"session_id":"s","seq":1,"step":-1}`, "head: invalid step -1"},
		{`{"version":1,"session_id":"s","seq":1`, "head: unexpected end of JSON input"},
	} {
		_, err := session.DecodeHead([]byte(tt.head))
		assert.EqualError(t, err, tt.want, "DecodeHead(%s) = %v, want %q", tt.head, err, tt.want)
		if strings.Contains(tt.head, `"version":9`) {
			_, ok := errors.AsType[*session.VersionError](err)
			assert.True(t, ok, "DecodeHead(%s) = %#v, want a *session.VersionError", tt.head, err)
		}
	}
	h, err := session.DecodeHead([]byte(`{"version":2,"session_id":"s","seq":3,"step":4,"generation":5,"root":1,"messages":6}`))
	require.NoError(t, err, "DecodeHead = %+v, %v", h, err)
	require.Equal(t, 2, h.Checkpoint.Version, "DecodeHead = %+v, %v", h, err)
	require.Equal(t, int64(3), h.Checkpoint.Seq, "DecodeHead = %+v, %v", h, err)
	require.Equal(t, 4, h.Checkpoint.Step, "DecodeHead = %+v, %v", h, err)
	require.Equal(t, 1, h.Root, "DecodeHead = %+v, %v", h, err)
	require.Equal(t, 6, h.Messages, "DecodeHead = %+v, %v", h, err)
}

// TestLoadSteps checks LoadSteps on what a store could hand it: a head
// filed under another seq, a head naming 10^15 messages, heads of two
// lineages sharing rows, rows in any order, steps without heads in a
// known and an unknown session, and a failing read of the rows.
func TestLoadSteps(t *testing.T) {
	encode := func(cp *session.Checkpoint, root int) []byte {
		b, err := session.EncodeHead(cp)
		require.NoError(t, err)
		if root != cp.Generation {
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			m["root"] = root
			b, _ = json.Marshal(m)
		}
		return b
	}
	msgs := sessiontest.Messages(0, 6)
	row := func(gen, i int, m defs.Message) session.GenerationRow {
		b, err := session.EncodeMessage(m)
		require.NoError(t, err)
		return session.GenerationRow{Generation: gen, Row: session.Row{Index: i, Data: b}}
	}
	rewritten := msgs[3]
	rewritten.Content = "rewritten"
	// Generation 0 holds messages 0-4; generation 1 (root 0) rewrites
	// message 3 and adds 5.
	rows := []session.GenerationRow{row(1, 5, msgs[5]), row(0, 4, msgs[4]), row(0, 0, msgs[0]), row(1, 3, rewritten), row(0, 1, msgs[1]), row(0, 2, msgs[2]), row(0, 3, msgs[3])}
	cp1 := &session.Checkpoint{SessionID: "s", Seq: 1, Step: 1, Transcript: msgs[:2]}
	cp2 := &session.Checkpoint{SessionID: "s", Seq: 2, Step: 2, Transcript: msgs[:5]}
	cp3 := &session.Checkpoint{SessionID: "s", Seq: 3, Step: 3, Generation: 1, Transcript: append(append(append([]defs.Message(nil), msgs[:3]...), rewritten), msgs[4:]...)}
	huge := encode(&session.Checkpoint{SessionID: "s", Seq: 4, Step: 4, Transcript: msgs[:1]}, 0)
	var m map[string]any
	_ = json.Unmarshal(huge, &m)
	m["messages"] = 1_000_000_000_000_000
	huge, _ = json.Marshal(m)
	heads := &session.StepHeads{ID: "s", First: 0, Last: 6, Known: true, Heads: []session.StepHead{
		{Step: 1, Seq: 1, Head: encode(cp1, 0)},
		{Step: 2, Seq: 2, Head: encode(cp2, 0)},
		{Step: 3, Seq: 3, Head: encode(cp3, 0)},
		{Step: 4, Seq: 4, Head: huge},
		{Step: 5, Seq: 9, Head: encode(cp1, 0)}, // filed under another seq
	}}
	var asked [3]int
	seq, err := session.LoadSteps(heads, func(root, gen, count int) ([]session.GenerationRow, error) {
		asked = [3]int{root, gen, count}
		return rows, nil
	})
	require.NoError(t, err)
	require.Equal(t, [3]int{0, 1, 1_000_000_000_000_000}, asked, "rows asked for (root, generation, count) %v", asked)
	var got []string
	for cp, err := range seq {
		if err != nil {
			got = append(got, err.Error())
			continue
		}
		var tr []string
		for _, m := range cp.Transcript {
			tr = append(tr, m.Content)
		}
		got = append(got, fmt.Sprintf("step %d seq %d: %q", cp.Step, cp.Seq, tr))
	}
	want := []string{
		`session "s": no checkpoint at step 0`,
		`step 1 seq 1: ["question 0: «ünïcødé» \"quoted\" \n\t<tag>" ""]`,
		`step 2 seq 2: ["question 0: «ünïcødé» \"quoted\" \n\t<tag>" "" "result 2" "answer 3" "question 4: «ünïcødé» \"quoted\" \n\t<tag>"]`,
		`step 3 seq 3: ["question 0: «ünïcødé» \"quoted\" \n\t<tag>" "" "result 2" "rewritten" "question 4: «ünïcødé» \"quoted\" \n\t<tag>" ""]`,
		`session "s": checkpoint 4 is corrupt: head names 1000000000000000 messages of generation 0, 5 are stored`,
		`session "s": checkpoint 9 is corrupt: head of session "s" seq 1 filed as session "s" seq 9`,
		`session "s": no checkpoint at step 6`,
	}
	require.Equal(t, strings.Join(want, "\n"), strings.Join(got, "\n"), "LoadSteps yielded\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))

	// An unknown session: its error alone.
	seq, _ = session.LoadSteps(&session.StepHeads{ID: "u", First: 0, Last: 3}, nil)
	n := 0
	for _, err := range seq {
		n++
		nf, ok := errors.AsType[*session.NotFoundError](err)
		require.True(t, ok, "unknown session: %v", err)
		require.False(t, nf.AtStep, "unknown session: %v", err)
		require.Equal(t, "u", nf.ID, "unknown session: %v", err)
	}
	require.Equal(t, 1, n, "unknown session: %d pairs, want 1", n)

	// A failing read of the rows is LoadSteps' error.
	boom := errors.New("boom")
	_, err = session.LoadSteps(heads, func(int, int, int) ([]session.GenerationRow, error) { return nil, boom })
	require.Equal(t, boom, err, "LoadSteps with a failing read: %v", err)
}

// TestAtStepsWithoutStepReader checks session.AtSteps on a store that only
// has AtStep: it yields AtStep's answers and ends after an unknown
// session's error.
func TestAtStepsWithoutStepReader(t *testing.T) {
	ctx := context.Background()
	st := struct{ session.Store }{session.NewMemory()}
	cp := &session.Checkpoint{SessionID: "s", Step: 1, Transcript: sessiontest.Messages(0, 2)}
	require.NoError(t, st.Save(ctx, cp))
	var got []string
	for cp, err := range session.AtSteps(ctx, st, "s", 0, 2) {
		if err != nil {
			got = append(got, err.Error())
		} else {
			got = append(got, fmt.Sprintf("step %d, %d messages", cp.Step, len(cp.Transcript)))
		}
	}
	want := `session "s": no checkpoint at step 0|step 1, 2 messages|session "s": no checkpoint at step 2`
	g := strings.Join(got, "|")
	require.Equal(t, want, g, "AtSteps = %s, want %s", g, want)
	n := 0
	for range session.AtSteps(ctx, st, "nope", 0, 5) {
		n++
	}
	require.Equal(t, 1, n, "AtSteps of an unknown session: %d pairs, want 1", n)
}

// TestLoadStepsAsLoad compares LoadSteps with Load on random stores:
// generations of rows with gaps, rows that do not decode, rows of negative
// indexes, heads of random lineages and counts, in random step order.
func TestLoadStepsAsLoad(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 400 {
		var rows []session.GenerationRow
		gens := 1 + r.IntN(6)
		for g := range gens {
			for i := range 10 {
				switch k := r.IntN(10); {
				case k < 4:
					continue // not stored in this generation
				case k == 4 && round%5 == 0:
					rows = append(rows, session.GenerationRow{Generation: g, Row: session.Row{Index: i, Data: []byte("not json")}})
				case k == 5 && round%7 == 0 && i == 0:
					rows = append(rows, session.GenerationRow{Generation: g, Row: session.Row{Index: -1, Data: []byte("{}")}})
				default:
					m := defs.UserMessage(fmt.Sprintf("message %d of generation %d", i, g))
					b, _ := session.EncodeMessage(m)
					rows = append(rows, session.GenerationRow{Generation: g, Row: session.Row{Index: i, Data: b}})
				}
			}
		}
		r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
		h := &session.StepHeads{ID: "s", First: 0, Last: 12, Known: true}
		for step := range 12 {
			if r.IntN(4) == 0 {
				continue
			}
			gen := r.IntN(gens)
			root := r.IntN(gen + 1)
			count := r.IntN(12)
			if r.IntN(20) == 0 {
				count = 1_000_000_000_000
			}
			seq := int64(step + 1)
			head := fmt.Sprintf(`{"version":1,"session_id":"s","seq":%d,"step":%d,"generation":%d,"root":%d,"messages":%d}`, seq, step, gen, root, count)
			h.Heads = append(h.Heads, session.StepHead{Step: step, Seq: seq, Head: []byte(head)})
		}
		seq, err := session.LoadSteps(h, func(root, gen, count int) ([]session.GenerationRow, error) {
			var out []session.GenerationRow
			for _, r := range rows {
				if root <= r.Generation && r.Generation <= gen && r.Index < count {
					out = append(out, r)
				}
			}
			return out, nil
		})
		require.NoError(t, err)
		// Load with the rows of its lineage, as a store selects them.
		load := func(sh session.StepHead) (*session.Checkpoint, error) {
			return session.Load("s", sh.Seq, sh.Head, func(root, gen, count int) ([]session.Row, error) {
				best := map[int]session.GenerationRow{}
				for _, r := range rows {
					if root <= r.Generation && r.Generation <= gen && r.Index < count {
						if b, ok := best[r.Index]; !ok || r.Generation > b.Generation {
							best[r.Index] = r
						}
					}
				}
				var out []session.Row
				for _, r := range best {
					out = append(out, r.Row)
				}
				slices.SortFunc(out, func(a, b session.Row) int { return a.Index - b.Index })
				return out, nil
			})
		}
		step, next := 0, 0
		for got, gotErr := range seq {
			var want *session.Checkpoint
			var wantErr error = &session.NotFoundError{ID: "s", Step: step, AtStep: true}
			if next < len(h.Heads) && h.Heads[next].Step == step {
				want, wantErr = load(h.Heads[next])
				next++
			}
			if !reflect.DeepEqual(want, got) || !reflect.DeepEqual(wantErr, gotErr) {
				for _, r := range rows {
					t.Logf("row g%d i%d %q", r.Generation, r.Index, r.Data[:min(5, len(r.Data))])
				}
				for _, x := range h.Heads {
					t.Logf("head %s", x.Head)
				}
				require.Fail(t, fmt.Sprintf("round %d, step %d: LoadSteps gave %+v, %v; Load %+v, %v", round, step, got, gotErr, want, wantErr))
			}
			step++
		}
		require.Equal(t, 13, step, "round %d: %d steps yielded, want 13", round, step)
	}
}
