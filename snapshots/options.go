package snapshots

import (
	"regexp"

	"github.com/reprompt/reprompt/runtime"
)

// Option configures Run and Format. Options are made by the functions of
// this package (Config, Dir, Redact, ExpectError); the interface is sealed.
type Option interface{ apply(*options) }

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

type redaction struct {
	re   *regexp.Regexp
	repl string
}

type options struct {
	cfg       runtime.Config
	dir       string
	redact    []redaction
	expectErr bool
	decide    func(runtime.PendingApproval) (bool, string)
	turns     []string
}

func newOptions(opts []Option) *options {
	o := &options{dir: DefaultDir}
	for _, opt := range opts {
		if opt != nil {
			opt.apply(o)
		}
	}
	return o
}

// Turns makes the run a conversation of one turn per message: each message
// is the user's next turn (runtime.Runner.Continue), the first one
// included, in order, and the golden file holds the steps of every turn,
// each turn's first step with its message (a "sent" section). A turn that
// pauses for approval is decided as the rest of the run is (Decide).
func Turns(messages ...string) Option {
	return optionFunc(func(o *options) { o.turns = append(o.turns, messages...) })
}

// Config sets the configuration of the run. Without it Run uses the zero
// runtime.Config. Format ignores it.
func Config(cfg runtime.Config) Option {
	return optionFunc(func(o *options) { o.cfg = cfg })
}

// Dir sets the directory golden files are read from and written to. Without
// it Run uses DefaultDir ("testdata"). Format ignores it.
func Dir(dir string) Option {
	return optionFunc(func(o *options) { o.dir = dir })
}

// Redact replaces every match of re in the rendered snapshot with repl
// (which may use $1-style references, as in regexp.ReplaceAllString), so
// that volatile values (timestamps, random ids, temporary paths) do not make
// snapshots differ. Redactions apply in the order given, to the whole text
// after the header line. Redact panics if re is nil.
func Redact(re *regexp.Regexp, repl string) Option {
	if re == nil {
		panic("snapshots.Redact: nil regexp")
	}
	return optionFunc(func(o *options) { o.redact = append(o.redact, redaction{re, repl}) })
}

// ExpectError declares that the run must end with an error. The error's
// text is part of the snapshot either way; without ExpectError a run that
// fails also fails the test, and with it a run that succeeds fails the test.
func ExpectError() Option {
	return optionFunc(func(o *options) { o.expectErr = true })
}
