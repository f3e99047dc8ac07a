package temporal_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	rt "github.com/reprompt/reprompt/temporal"
)

// flaky fails its first calls with err, then answers.
type flaky struct {
	mu    sync.Mutex
	fails int
	err   error
	calls int
}

func (m *flaky) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.calls <= m.fails {
		return nil, m.err
	}
	return &llm.Reply{Message: defs.Message{Role: defs.RoleAssistant, Content: "ok"}}, nil
}

// A model call failing with a retryable *llm.ModelError is retried by
// the activity's retry policy; one that is not retryable is not, and the
// workflow fails naming it.
func TestModelErrors(t *testing.T) {
	fast := &temporal.RetryPolicy{InitialInterval: 1, MaximumAttempts: 5}
	tl := &tools{}

	m := &flaky{fails: 2, err: &llm.ModelError{StatusCode: 503, Retryable: true, Message: "overloaded"}}
	env := newEnv(t, rt.Agent{Name: "a", Prompt: tl.agent, Model: m, ModelRetry: fast})
	env.ExecuteWorkflow(rt.WorkflowName, rt.Input{Agent: "a"})
	require.NoError(t, env.GetWorkflowError())
	var res rt.Result
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, "ok", res.Text)
	require.Equal(t, 3, m.calls)

	m = &flaky{fails: 1, err: &llm.ModelError{StatusCode: 400, Message: "bad request"}}
	env = newEnv(t, rt.Agent{Name: "a", Prompt: tl.agent, Model: m, ModelRetry: fast})
	env.ExecuteWorkflow(rt.WorkflowName, rt.Input{Agent: "a"})
	err := env.GetWorkflowError()
	require.ErrorContains(t, err, "status 400")
	require.ErrorContains(t, err, "bad request")
	require.Equal(t, 1, m.calls)
}

// An input naming an agent the worker does not know fails the workflow
// with an error naming it.
func TestUnknownAgent(t *testing.T) {
	tl := &tools{}
	env := newEnv(t, rt.Agent{Name: "a", Prompt: tl.agent, Model: &flaky{}})
	env.ExecuteWorkflow(rt.WorkflowName, rt.Input{Agent: "nope"})
	require.ErrorContains(t, env.GetWorkflowError(), `agent "nope" is not registered with this worker`)
}

// A request the provider rejects as too long comes back from the activity
// as the *llm.ModelError it was, so the runtime recovers as in process:
// the Recovery effects run and the request is sent again.
func TestContextTooLongRecovers(t *testing.T) {
	m := &flaky{fails: 1, err: &llm.ModelError{StatusCode: 400, ContextTooLong: true, Message: "too long"}}
	recovered := 0
	agent := func(p *prompt.Prompt) error {
		p.Effect(effects.Once, func(ctx context.Context, s *effects.Step) error {
			if s.Number == 0 && m.calls > 0 {
				recovered++
			}
			return nil
		}, effects.Recovery())
		p.User("hi")
		return nil
	}
	env := newEnv(t, rt.Agent{Name: "a", Prompt: agent, Model: m})
	env.ExecuteWorkflow(rt.WorkflowName, rt.Input{Agent: "a"})
	require.NoError(t, env.GetWorkflowError())
	var res rt.Result
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, "ok", res.Text)
	require.Equal(t, 2, m.calls)
	require.Equal(t, 1, recovered)
}

// summarizer answers summary requests with a fixed text.
type summarizer struct{ calls int }

func (s *summarizer) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	s.calls++
	if req.Purpose != llm.PurposeSummary {
		return nil, fmt.Errorf("summarizer asked for %q", req.Purpose)
	}
	return &llm.Reply{Message: defs.Message{Role: defs.RoleAssistant, Content: "SUM of " + req.Messages[0].Content}}, nil
}

// A completion an effect asks for (a summary) is a model activity,
// answered by Config.Summarizer on the worker.
func TestSummaryIsAnActivity(t *testing.T) {
	sum := &summarizer{}
	agent := func(p *prompt.Prompt) error {
		summary, setSummary := prompt.State(p, "summary", "")
		p.Def("summary", summary)
		p.Effect(effects.Once, func(ctx context.Context, s *effects.Step) error {
			text, err := s.Model.Complete(ctx, "Summarise.", "the talk")
			setSummary.Set(ctx, text)
			return err
		})
		p.User("hi")
		return nil
	}
	env := newEnv(t, rt.Agent{Name: "a", Prompt: agent, Model: &flaky{}, Config: runtime.Config{Summarizer: sum}})
	activities := map[string]int{}
	env.SetOnActivityStartedListener(func(info *activity.Info, ctx context.Context, args converter.EncodedValues) {
		activities[info.ActivityType.Name]++
	})
	env.ExecuteWorkflow(rt.WorkflowName, rt.Input{Agent: "a"})
	require.NoError(t, env.GetWorkflowError())
	var res rt.Result
	require.NoError(t, env.GetWorkflowResult(&res))
	require.JSONEq(t, `{"summary":"SUM of the talk"}`, string(res.State))
	require.Equal(t, 1, sum.calls)
	require.Equal(t, map[string]int{rt.ActivityGenerate: 2}, activities, "the summary and the step")
}
