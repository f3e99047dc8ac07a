package snapshots

import (
	"errors"
	"testing"

	"github.com/reprompt/reprompt/internal/steprec"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
)

// Header is the first line of every golden file. The number is the version
// of the format; a file with another header fails the comparison and must be
// regenerated.
const Header = steprec.Header

// Environment variables read by Run and CheckUnused.
const (
	// UpdateEnv, when set to anything but "", "0" or "false", makes Run
	// write the golden files instead of comparing with them.
	UpdateEnv = "REPROMPT_UPDATE"
	// CIEnv, when set likewise, marks a CI run: golden files are never
	// written, and a missing one fails the test.
	CIEnv = "CI"
)

// DefaultDir is the directory golden files are kept in, relative to the
// package directory (where go test runs).
const DefaultDir = "testdata"

// ext is the extension of golden files.
const ext = ".txtar"

// headerPrefix starts the header of every version of the format.
const headerPrefix = steprec.HeaderPrefix

// Run runs fn against model to completion, renders every step with Format,
// answers the tool calls the run pauses for with Decide's function (without
// Decide, the run's pause ends the snapshot),
// and compares the text with the golden file of the test:
// <dir>/<t.Name()>.txtar, subtests in subdirectories.
//
// A difference fails the test with a diff (-want +got) per section and the
// command that rewrites the file. With UpdateEnv set, the file is written
// instead (created if missing); with CIEnv set too, the test fails instead:
// golden files are never written on CI. A missing file fails the test
// unless UpdateEnv is set. See the package documentation.
//
// When model is a *Model, every request its script could not answer (see
// Model.Err) fails the test too, though the run may have gone on without
// the answer (compaction falls back on a summary made by rule; a failed
// sub-agent is an error result for its parent).
//
// The run uses t.Context(). Run returns the run's result, so that the test
// can assert more on it; it is nil only when the run could not start.
func Run(t testing.TB, fn prompt.Func, model llm.Model, opts ...Option) *runtime.Result {
	t.Helper()
	o := newOptions(opts)
	res, err := runWithDecisions(t.Context(), model, fn, o)
	switch {
	case err != nil && !o.expectErr:
		t.Errorf("snapshots: the run failed: %v", err)
	case err == nil && o.expectErr:
		t.Errorf("snapshots: the run succeeded, but ExpectError was given")
	}
	if sm, ok := model.(*Model); ok {
		// Script errors the run did not end with (a summary compaction
		// replaced by one made by rule, a sub-agent's failure given to its
		// parent as an error result) fail the test too.
		for _, e := range sm.scriptErrors() {
			if !errors.Is(err, e) {
				t.Errorf("snapshots: %v", e)
			}
		}
	}
	var steps []*runtime.Step
	if res != nil {
		steps = res.Steps
	}
	compareGolden(t, o.dir, goldenPath(o.dir, t.Name()), format(steps, err, o))
	return res
}
