package runtime

import (
	"errors"
	"fmt"
)

// Errors a run can end with. Test them with errors.Is.
var (
	// ErrMaxSteps: the model still asked for tools when the step limit was
	// reached.
	ErrMaxSteps = errors.New("step limit reached")
	// ErrDone: Next was called on a run that already ended.
	ErrDone = errors.New("run already ended")
)

// StepError is a step that failed outside the prompt function and the
// effects (which report *prompt.Error and *effects.Error): the model call,
// rendering the request, a request that failed validation and was not sent,
// saving a checkpoint, or a Config.ToolExecutor. Op says which, as one of
// the Op constants.
type StepError struct {
	Step int
	Op   string // OpModel, OpRender, OpValidate, OpCheckpoint or OpTools
	Err  error
}

// The values of StepError.Op: what part of the step failed.
const (
	// OpModel: the model call failed (after the retries Config.Retries
	// allows); Err is typically an *llm.ModelError.
	OpModel = "model"
	// OpRender: the request could not be rendered from the definitions
	// (a data definition that cannot be encoded, say).
	OpRender = "render"
	// OpValidate: the rendered request, or the model's reply, broke a rule
	// of the wire format and was not sent on (Err is an *llm.RequestError).
	OpValidate = "validate"
	// OpCheckpoint: saving the session's checkpoint to Config.Store failed;
	// the step's work is not durable.
	OpCheckpoint = "checkpoint"
	// OpTools: the Config.ToolExecutor failed: it returned an error, or
	// returned leaving a call without a result.
	OpTools = "tools"
)

func (e *StepError) Error() string {
	return fmt.Sprintf("step %d: %s: %v", e.Step, e.Op, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// PanicError is a panic in a callback of the run (Config.StopWhen,
// Config.OnDelta, a model), recovered at the step boundary.
type PanicError struct {
	Step  int
	Site  string
	Value any
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("step %d: panic at %s: %v", e.Step, e.Site, e.Value)
}

// Unwrap returns the panic value when it is an error (panic(err)), so that
// errors.Is and errors.As see through the panic; otherwise nil.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
