package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/runtime"
)

type generateInput struct {
	Agent   string  `json:"agent"`
	Request request `json:"request"`
}

type toolInput struct {
	Agent    string          `json:"agent"`
	Input    string          `json:"input,omitempty"`
	SubAgent string          `json:"sub_agent,omitempty"`
	Step     int             `json:"step"`
	State    json.RawMessage `json:"state,omitempty"`
	Offered  []string        `json:"offered"`
	Call     toolCall        `json:"call"`
}

type toolOutput struct {
	Content string                     `json:"content"`
	IsError bool                       `json:"is_error,omitempty"`
	Changes map[string]json.RawMessage `json:"changes,omitempty"`
	// Err is the text of the Go error behind an error result.
	Err string `json:"err,omitempty"`
}

// modelErrorType is the type of the application error an *llm.ModelError
// travels as; its details are a modelErrorDetails.
const modelErrorType = "ModelError"

type modelErrorDetails struct {
	StatusCode     int    `json:"status_code,omitempty"`
	Retryable      bool   `json:"retryable,omitempty"`
	ContextTooLong bool   `json:"context_too_long,omitempty"`
	Message        string `json:"message,omitempty"`
}

// generate is the model activity.
func (reg *registry) generate(ctx context.Context, in generateInput) (*reply, error) {
	a, err := reg.agent(in.Agent)
	if err != nil {
		return nil, err
	}
	defer heartbeat(ctx)()
	req := in.Request.request()
	m := a.Model
	if req.Purpose == llm.PurposeSummary && a.Config.Summarizer != nil {
		m = a.Config.Summarizer
	}
	r, err := m.Generate(ctx, req)
	if err == nil && r == nil {
		err = errors.New("model returned no reply and no error")
	}
	if err != nil {
		var me *llm.ModelError
		if errors.As(err, &me) {
			d := modelErrorDetails{StatusCode: me.StatusCode, Retryable: me.Retryable, ContextTooLong: me.ContextTooLong, Message: me.Message}
			return nil, temporal.NewApplicationErrorWithOptions(me.Error(), modelErrorType, temporal.ApplicationErrorOptions{
				NonRetryable: !me.Retryable || me.ContextTooLong, Cause: err, Details: []any{d}})
		}
		return nil, err
	}
	r.Message.Role = defs.RoleAssistant
	return &reply{Message: Message{r.Message}, Usage: r.Usage, FinishReason: r.FinishReason, ID: r.ID}, nil
}

// modelError turns the failure of a model activity back into the
// *llm.ModelError the model returned, so that the runtime recovers from
// a request too long as it does out of a workflow.
func modelError(err error) error {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) && ae.Type() == modelErrorType && ae.HasDetails() {
		var d modelErrorDetails
		if ae.Details(&d) == nil {
			return &llm.ModelError{StatusCode: d.StatusCode, Retryable: d.Retryable, ContextTooLong: d.ContextTooLong, Message: d.Message, Err: err}
		}
	}
	return err
}

// tool is the tool activity: it runs one call with runtime.RunTool, which
// executes the prompt function again, for the call's step and against the
// state the step's calls started from, to find the tool.
func (reg *registry) tool(ctx context.Context, in toolInput) (*toolOutput, error) {
	a, err := reg.agent(in.Agent)
	if err != nil {
		return nil, err
	}
	defer heartbeat(ctx)()
	out, err := runtime.RunTool(ctx, a.Model, a.Prompt, a.Config, runtime.ToolRun{
		Input: in.Input, Agent: in.SubAgent, Step: in.Step, State: in.State, Offered: in.Offered,
		Call: defs.ToolCall{ID: in.Call.ID, Name: in.Call.Name, Arguments: in.Call.Arguments},
	})
	if err != nil {
		// The prompt function failed here, where it did not in the
		// workflow: it is not a function of its state.
		return nil, temporal.NewNonRetryableApplicationError("the prompt function failed when executed again to find the tool: "+err.Error(), "PromptError", err)
	}
	res := &toolOutput{Content: out.Content, IsError: out.IsError, Changes: out.Changes}
	if out.Err != nil {
		res.Err = out.Err.Error()
	}
	return res, nil
}

// heartbeat records heartbeats of the activity of ctx until the function it
// returns is called, so that the death of its worker is noticed after the
// heartbeat timeout however long the tool runs.
func heartbeat(ctx context.Context) (stop func()) {
	every := activity.GetInfo(ctx).HeartbeatTimeout / 3
	if every <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}
