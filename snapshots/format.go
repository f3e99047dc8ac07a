package snapshots

import (
	"strings"

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
	return steprec.Write(run, steprec.WriteOptions{Redact: func(s string) string {
		for _, r := range o.redact {
			s = r.re.ReplaceAllString(s, r.repl)
		}
		return s
	}})
}

// isMarker reports a line that starts a section of a txtar archive.
func isMarker(line string) bool {
	return strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --") && len(line) >= 6
}
