package viewer

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/reprompt/reprompt/internal/steprec"
)

// FormatError reports a file that is not what it was read as: not a
// golden step file nor a recording, or one damaged at Line (1-based; 0 when
// the whole file is at fault).
type FormatError struct {
	Path   string
	Line   int
	Reason string
}

func (e *FormatError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Reason)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Reason)
}

// FromGolden reads a golden step file, as package snapshots writes it
// (steprec.Parse reads it). Its steps hold everything the file shows;
// durations and the runtime's token counts are not in the format. A file
// that does not parse is a *FormatError. A golden file damaged after its
// header, or cut short, comes back with the *FormatError and the steps
// read before the damage: the last of them is marked damaged (it may
// lack what came after), and a note says what could not be read.
//
// A step a crash cut short after the model's reply and a resume completed
// is one step, as a store shows it: the record of the attempt (what a run
// that failed returned) and that of its completion (steprec.Step.Resumed)
// show as the completion, with the attempt's request.
func FromGolden(path string, data []byte) (*Run, error) {
	g, err := steprec.Parse(data)
	var ferr *FormatError
	if pe, ok := errors.AsType[*steprec.ParseError](err); ok {
		ferr = &FormatError{Path: path, Line: pe.Line, Reason: pe.Reason}
		if g == nil {
			return nil, ferr
		}
	} else if err != nil {
		return nil, err
	}
	run := newRun(filepath.Base(path), "golden step file")
	var last, attempt *steprec.Step
	for i, rec := range g.Steps {
		if rec == nil {
			continue
		}
		if i+1 < len(g.Steps) && resumes(g.Steps[i+1], rec) {
			attempt = rec // shown with its completion, the next record
			continue
		}
		if attempt != nil {
			// One step, as a store shows it: the completion, which sent
			// no request, with the attempt's.
			completed := *rec
			completed.Request, attempt = attempt.Request, nil
			rec = &completed
		}
		s := &Step{Number: rec.Step, Reply: -1}
		run.applyRecord(s, rec)
		run.Steps = append(run.Steps, s)
		last = rec
	}
	run.Error, run.Done = g.Err, ferr == nil
	if ferr == nil && last != nil && len(last.Awaiting) > 0 {
		run.Done = false // paused, as a store shows it
		run.Steps[len(run.Steps)-1].Stopped = "paused"
		ids := make([]string, len(last.Awaiting))
		for i, a := range last.Awaiting {
			ids[i] = a.CallID + " " + a.Tool
		}
		run.Notes = append(run.Notes, "the run is paused, awaiting "+strings.Join(ids, ", "))
	}
	goldenCommits(run.Steps)
	run.finish()
	if ferr != nil {
		run.Notes = append(run.Notes, goldenDamage(run, ferr))
	}
	run.Notes = append(run.Notes, "golden files hold no durations, and no counts of tokens: no token chart")
	if ferr != nil {
		return run, ferr
	}
	return run, nil
}

// resumes reports whether rec is the record of a resume that completed
// attempt, the record before it of a step a crash cut short after the
// model's reply (a golden file of the steps a crashed run returned, then
// those of the run resumed): the same step, not paused, not completed.
func resumes(rec, attempt *steprec.Step) bool {
	return rec != nil && attempt != nil && rec.Resumed && len(rec.Decisions) == 0 && rec.Request == nil &&
		attempt.Step == rec.Step && !attempt.Resumed && len(attempt.Decisions) == 0 && len(attempt.Awaiting) == 0 &&
		attempt.Request != nil && attempt.Results == nil && attempt.State == nil
}

// goldenDamage marks the last step read of a damaged golden file and
// returns the run's note on the damage.
func goldenDamage(run *Run, ferr *FormatError) string {
	where := "the file is cut short (it has no end section)"
	if ferr.Line > 0 {
		where = fmt.Sprintf("line %d is damaged: %s", ferr.Line, ferr.Reason)
	}
	if len(run.Steps) == 0 {
		return where + ": no step could be read"
	}
	last := run.Steps[len(run.Steps)-1]
	last.Damage = where + ": this step may be incomplete, and no step after it could be read"
	return fmt.Sprintf("%s: the steps read before it are shown (%d; the last, step %d, may be incomplete); the rest of the file could not be read", where, len(run.Steps), last.Number)
}

// goldenCommits sizes the commits a golden file marks ("transcript
// committed"): from the transcript the previous step left (its request,
// reply and results) to this step's request, which is exact for a commit
// made before the model call.
func goldenCommits(steps []*Step) {
	for i, s := range steps {
		if s.committed {
			c := Commit{After: len(s.Request)}
			if i > 0 {
				p := steps[i-1]
				c.Before = len(p.Request) + 1 + len(p.Calls)
			}
			s.Commits = append(s.Commits, c)
		}
		for _, a := range s.Agents {
			goldenCommits(a.Steps)
		}
	}
}
