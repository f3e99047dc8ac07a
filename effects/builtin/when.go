package builtin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/expr-lang/expr/file"

	"github.com/reprompt/reprompt/effects/builtin/internal/when"
)

// DefaultWhenTimeout bounds the evaluation of one when condition when
// Config.WhenTimeout is zero. A condition over WhenEnv takes microseconds;
// the bound only stops a hostile or mistaken one.
const DefaultWhenTimeout = 50 * time.Millisecond

// Limits of a when condition, checked by Parse (and by Register for
// conditions set in code) or while it is evaluated.
const (
	// WhenMaxNodes is the most nodes a condition's syntax tree may have.
	WhenMaxNodes = when.MaxNodes
	// WhenMaxRange is the most elements a range with constant bounds
	// (1..100) may have.
	WhenMaxRange = when.MaxRange
	// WhenMaxString is the longest string, in bytes, a condition may build.
	WhenMaxString = when.MaxString
	// WhenMemoryBudget is expr's memory budget for one evaluation: the
	// elements of the arrays, ranges and maps it builds, all together.
	WhenMemoryBudget = when.MemoryBudget
)

// Errors a when condition's evaluation can end with, in a *WhenError.
var (
	// ErrWhenTimeout: the condition ran longer than its time limit
	// (Config.WhenTimeout).
	ErrWhenTimeout = when.ErrTimeout
	// ErrWhenTooLarge: the condition built a string longer than
	// WhenMaxString or arrays past WhenMemoryBudget.
	ErrWhenTooLarge = when.ErrTooLarge
)

// WhenError is a when condition whose evaluation failed: it ran past its
// time limit (Err is ErrWhenTimeout), the run's context ended while it ran
// (Err is the context's error), it built too large a value (Err is
// ErrWhenTooLarge), or expr reported an error (Err is expr's *file.Error:
// a run-time error, or a compile error of a condition set in code, which
// Parse would have reported as a *ConfigError). The effect fails with it,
// and so does the run.
type WhenError struct {
	// File, Line and Column locate the condition in its configuration file
	// (1-based); Line is 0 for a condition set in code.
	File         string
	Line, Column int
	// When is the condition's source.
	When string
	// Limit is the time limit the condition had.
	Limit time.Duration
	Err   error
}

func (e *WhenError) Error() string {
	msg := e.Err.Error()
	switch {
	case errors.Is(e.Err, ErrWhenTimeout):
		msg = fmt.Sprintf("%v (%v)", e.Err, e.Limit)
	case errors.Is(e.Err, context.Canceled), errors.Is(e.Err, context.DeadlineExceeded):
		msg = "stopped: " + msg
	}
	var fe *file.Error
	if errors.As(e.Err, &fe) {
		msg = fe.Message
	}
	if e.Line == 0 {
		return fmt.Sprintf("when %q: %s", e.When, msg)
	}
	return fmt.Sprintf("%s:%d:%d: when %q: %s", e.File, e.Line, e.Column, e.When, msg)
}

// Unwrap returns Err.
func (e *WhenError) Unwrap() error { return e.Err }
