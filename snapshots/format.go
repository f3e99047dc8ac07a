package snapshots

import (
	"slices"
	"strings"
	"sync"

	"github.com/reprompt/reprompt/internal/steprec"
	"github.com/reprompt/reprompt/runtime"
)

// Format renders steps, and the error the run ended with (nil if none), as
// the text of a golden file. The Redact options given apply; the others are
// ignored. The text is deterministic: it holds no wall-clock time, map keys
// are sorted, and effects are named by id and file without line numbers.
// Nil steps are skipped.
func Format(steps []*runtime.Step, runErr error, opts ...Option) []byte {
	return format(steps, runErr, newOptions(opts))
}

// FormatStep renders the step that steps[i] is a record of as Format
// shows it in the file of steps[:i+1]: the sections of that record and of
// the records of the same step before it (a step completed after a pause
// has two), without the header and the end section. The steps before are
// read only for what the step repeats of them ("(as in step N)"), so that
// showing one step of a long run does not format the run. "" when
// steps[i] is nil or i is out of range.
func FormatStep(steps []*runtime.Step, i int, opts ...Option) string {
	if i < 0 || i >= len(steps) || steps[i] == nil {
		return ""
	}
	var redact func(string) string
	if len(opts) > 0 { // the options hold a runtime.Config: not made for none
		redact = newOptions(opts).redactFunc()
	}
	// The records of other steps are read only for the schemas their
	// requests showed, and for the request that a record of the step
	// compares its own with: the last one sent before it.
	sc := scratches.Get().(*scratch)
	defer sc.free()
	sc.recs = slices.Grow(sc.recs[:0], i+1)[:i+1]
	run := &sc.run
	run.Steps = slices.Grow(run.Steps[:0], i+1)[:i+1]
	n := steps[i].Number
	last := -1 // the record of another step that sent the last request, if its messages are not set
	for j, s := range steps[:i+1] {
		rec := &sc.recs[j]
		switch {
		case s == nil:
			rec = nil
		case s.Number != n:
			s.ShownRecord(rec, true)
			if rec.Request != nil {
				last = j
			}
		default:
			if last >= 0 {
				sc.recs[last].Request.Messages = steps[last].RequestMessages()
				last = -1
			}
			s.ShownRecord(rec, false)
		}
		run.Steps[j] = rec
	}
	return steprec.WriteStep(run, i, steprec.WriteOptions{Redact: redact})
}

// scratch holds the records FormatStep writes from, reused from call to
// call: a record is a large struct, and the records of the steps before
// were half of the bytes FormatStep allocated.
type scratch struct {
	recs []steprec.Step
	run  steprec.Run
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

// free clears sc, so that it keeps no step's text alive, and gives it
// back to scratches unless it grew large.
func (sc *scratch) free() {
	if cap(sc.recs) > 256 {
		return
	}
	clear(sc.recs)
	clear(sc.run.Steps)
	scratches.Put(sc)
}

// format writes the records of steps (runtime.Step.Record) with the one
// codec of golden step files, package internal/steprec.
func format(steps []*runtime.Step, runErr error, o *options) []byte {
	run := &steprec.Run{Steps: make([]*steprec.Step, len(steps))}
	for i, s := range steps {
		if s != nil {
			run.Steps[i] = s.Record()
		}
	}
	if runErr != nil {
		run.Err = runErr.Error()
	}
	return steprec.Write(run, steprec.WriteOptions{Redact: o.redactFunc()})
}

// redactFunc returns the function that applies o's Redact options; nil
// when there are none.
func (o *options) redactFunc() func(string) string {
	if len(o.redact) == 0 {
		return nil
	}
	return func(s string) string {
		for _, r := range o.redact {
			s = r.re.ReplaceAllString(s, r.repl)
		}
		return s
	}
}

// isMarker reports a line that starts a section of a txtar archive.
func isMarker(line string) bool {
	return strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --") && len(line) >= 6
}
