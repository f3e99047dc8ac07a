package builtin_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects/builtin"
)

func history(n, size int) []defs.Message {
	msgs := []defs.Message{user("task")}
	for i := range n {
		msgs = append(msgs, toolTurn("c"+strconv.Itoa(i), size)...)
	}
	return msgs
}

func TestTrimWaitsForABatch(t *testing.T) {
	trim := builtin.TrimToolResults(builtin.TrimConfig{Batch: 4}) // preserve 4 by default
	// 7 results: 3 are old, fewer than a batch.
	msgs := history(7, 2000)
	if got := committed(t, trim, newStep(0, msgs, 0)); got != nil {
		t.Fatalf("trimmed with only 3 old results:\n%s", dump(got))
	}
	// 8 results: 4 old ones, a batch: all four trimmed in one commit.
	msgs = append(msgs, toolTurn("c7", 2000)...)
	got := committed(t, trim, newStep(1, msgs, 0))
	if got == nil {
		t.Fatal("no commit with 4 old results")
	}
	for i, m := range got {
		if m.Role != defs.RoleTool {
			continue
		}
		old := i < len(got)-8
		if trimmed := m.Meta[builtin.MetaTrimmed] != ""; trimmed != old {
			t.Errorf("message %d: trimmed=%v, want %v", i, trimmed, old)
		}
		if old {
			if m.Meta[builtin.MetaTrimmed] != "2000" {
				t.Errorf("message %d: Meta trimmed = %q, want the original length 2000", i, m.Meta[builtin.MetaTrimmed])
			}
			if !strings.HasPrefix(m.Content, strings.Repeat("x", 500)+"\n[… trimmed 1500 of 2000 characters]") || len(m.Content) > 600 {
				t.Errorf("message %d: content %q", i, m.Content)
			}
		} else if len(m.Content) != 2000 {
			t.Errorf("recent message %d was changed", i)
		}
	}
	if msgs[2].Meta != nil || len(msgs[2].Content) != 2000 {
		t.Error("the step's transcript was modified in place")
	}
	// The next step: nothing new is old enough; nothing is trimmed again.
	next := append(got, assistant("thinking"))
	if again := committed(t, trim, newStep(2, next, 0)); again != nil {
		t.Fatalf("trimmed again:\n%s", dump(again))
	}
}

func TestTrimNeverCutsErrorsOrSmallSavings(t *testing.T) {
	trim := builtin.TrimToolResults(builtin.TrimConfig{PreserveRecent: -1, Batch: 1})
	msgs := []defs.Message{
		user("task"),
		call("", "run:e1"), errResult("e1", "run", strings.Repeat("e", 5000)),
		call("", "run:s1"), result("s1", "run", strings.Repeat("s", 600)), // saves < 200
		call("", "run:l1"), result("l1", "run", strings.Repeat("l", 900)),
	}
	got := committed(t, trim, newStep(0, msgs, 0))
	if got == nil {
		t.Fatal("no commit")
	}
	if got[2].Content != msgs[2].Content || got[2].Meta != nil {
		t.Error("an error result was trimmed")
	}
	if got[4].Content != msgs[4].Content {
		t.Error("a result was trimmed for a saving below MinSaving")
	}
	if got[6].Meta[builtin.MetaTrimmed] != "900" {
		t.Errorf("long result not trimmed: %v", got[6].Meta)
	}
}

func TestTrimRescansAnotherTranscript(t *testing.T) {
	trim := builtin.TrimToolResults(builtin.TrimConfig{Batch: 1, PreserveRecent: 1})
	a := history(3, 1000)
	if committed(t, trim, newStep(0, a, 0)) == nil {
		t.Fatal("no commit on a")
	}
	// Another run's transcript, shorter: the effect must not reuse what it
	// learnt of a.
	b := []defs.Message{user("other"), call("", "read_file:z1"), result("z1", "read_file", "short")}
	if got := committed(t, trim, newStep(0, b, 0)); got != nil {
		t.Fatalf("trimmed b:\n%s", dump(got))
	}
	b = append(b, toolTurn("z2", 1000)...)
	b = append(b, toolTurn("z3", 1000)...)
	got := committed(t, trim, newStep(1, b, 0))
	if got == nil || got[4].Meta[builtin.MetaTrimmed] == "" || got[2].Meta != nil {
		t.Fatalf("want z2 trimmed only:\n%s", dump(got))
	}
}

func TestTrimRespectsEarlierTrimming(t *testing.T) {
	trim := builtin.TrimToolResults(builtin.TrimConfig{Batch: 1, PreserveRecent: -1})
	msgs := history(2, 1000)
	msgs[2].Meta = map[string]string{builtin.MetaTrimmed: "5000"}
	got := committed(t, trim, newStep(0, msgs, 0))
	if got == nil {
		t.Fatal("no commit")
	}
	if got[2].Content != msgs[2].Content || got[2].Meta[builtin.MetaTrimmed] != "5000" {
		t.Error("a message trimmed before was trimmed again")
	}
}

func TestTrimDefaultBatch(t *testing.T) {
	trim := builtin.TrimToolResults(builtin.TrimConfig{})
	msgs := history(11, 2000) // 7 old results: fewer than a default batch
	if got := committed(t, trim, newStep(0, msgs, 0)); got != nil {
		t.Fatal("trimmed fewer than DefaultTrimBatch results")
	}
	msgs = append(msgs, toolTurn("c11", 2000)...)
	got := committed(t, trim, newStep(1, msgs, 0))
	n := 0
	for _, m := range got {
		if m.Meta[builtin.MetaTrimmed] != "" {
			n++
		}
	}
	if n != builtin.DefaultTrimBatch {
		t.Fatalf("trimmed %d, want %d", n, builtin.DefaultTrimBatch)
	}
}

func TestTrimPreserveTurns(t *testing.T) {
	trim := builtin.TrimToolResults(builtin.TrimConfig{PreserveTurns: 1, Batch: 1})
	long := strings.Repeat("x", 2000)
	// Three parallel results the model has not read yet: all kept, even
	// though PreserveRecent's default would have let two of them go.
	msgs := []defs.Message{user("task"),
		call("", "read_file:a", "read_file:b", "read_file:c"),
		result("a", "read_file", long), result("b", "read_file", long), result("c", "read_file", long)}
	if got := committed(t, trim, newStep(0, msgs, 0)); got != nil {
		t.Fatalf("trimmed results the model has not answered yet:\n%s", dump(got))
	}
	// The model answered them with another call: a, b, c are trimmed in one
	// commit; the new result d is kept.
	msgs = append(msgs, call("", "read_file:d"), result("d", "read_file", long))
	got := committed(t, trim, newStep(1, msgs, 0))
	if got == nil {
		t.Fatal("no commit after the model answered three long results")
	}
	for i, m := range got {
		if m.Role != defs.RoleTool {
			continue
		}
		wantTrimmed := m.ToolCallID != "d"
		if trimmed := m.Meta[builtin.MetaTrimmed] != ""; trimmed != wantTrimmed {
			t.Errorf("message %d (%s): trimmed=%v, want %v", i, m.ToolCallID, trimmed, wantTrimmed)
		}
	}
	// The first rewritten message is the first result of the answered
	// turn: everything before it is untouched, so the cached prefix holds.
	for i := range 2 {
		if got[i].Content != msgs[i].Content || got[i].Meta != nil {
			t.Errorf("message %d before the answered turn changed", i)
		}
	}
}
