package temporal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	rt "github.com/reprompt/reprompt/temporal"
)

// byAgent answers each agent from its own stepModel (Request.Agent).
type byAgent map[string]*stepModel

func (m byAgent) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	sm, ok := m[req.Agent]
	if !ok {
		return nil, fmt.Errorf("no script for agent %q", req.Agent)
	}
	return sm.Generate(ctx, req)
}

type searchArgs struct {
	Query string `json:"query"`
}

func researcher(p *prompt.Prompt) error {
	found, setFound := prompt.State(p, "found", []string{})
	p.DefSystem("role", "You research: "+p.Input())
	p.DefData("found", found)
	prompt.DefTool(p, "search", "Search.", func(ctx context.Context, a searchArgs) (string, error) {
		setFound.Update(ctx, func(l []string) []string { return append(append([]string(nil), l...), a.Query) })
		return "result for " + a.Query, nil
	}, prompt.Idempotent())
	return nil
}

func boss(p *prompt.Prompt) error {
	asked, setAsked := prompt.State(p, "asked", 0)
	p.Def("asked", fmt.Sprint(asked))
	p.DefAgent("researcher", "Research a question.", researcher)
	prompt.DefTool(p, "note", "Count a question.", func(ctx context.Context, a struct{}) (string, error) {
		setAsked.Update(ctx, func(n int) int { return n + 1 })
		return "noted", nil
	})
	p.User("Find X and Y.")
	return nil
}

func task(s string) json.RawMessage {
	b, _ := json.Marshal(prompt.AgentArgs{Task: s})
	return b
}

func bossModel() byAgent {
	return byAgent{
		"": {final: "X and Y.", replies: []defs.Message{
			{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{
				{ID: "a", Name: "researcher", Arguments: task("find X")},
				{ID: "b", Name: "note", Arguments: json.RawMessage(`{}`)},
				{ID: "c", Name: "researcher", Arguments: task("find Y")},
			}},
			{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "d", Name: "researcher", Arguments: json.RawMessage(`{"task": 3}`)}}},
		}},
		"researcher": {final: "found it", replies: []defs.Message{
			{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "s", Name: "search", Arguments: json.RawMessage(`{"query":"q"}`)}}},
		}},
	}
}

// Sub-agents registered as agents run as child workflows; those that are
// not run inside their tool's activity. Either way the parent's transcript
// and state are those of a run in process.
func TestSubAgents(t *testing.T) {
	want, err := runtime.Run(context.Background(), bossModel(), boss, runtime.Config{})
	require.NoError(t, err)
	wantState, err := runtime.StateOf[int](want, "asked")
	require.NoError(t, err)

	for _, child := range []bool{true, false} {
		t.Run(fmt.Sprintf("child=%t", child), func(t *testing.T) {
			agents := []rt.Agent{{Name: "boss", Prompt: boss, Model: bossModel()}}
			if child {
				agents = append(agents, rt.Agent{Name: "researcher", Prompt: researcher, Model: bossModel()})
			}
			env := newEnv(t, agents...)
			children := 0
			env.SetOnChildWorkflowStartedListener(func(*workflow.Info, workflow.Context, converter.EncodedValues) { children++ })
			env.ExecuteWorkflow(rt.WorkflowName, rt.Input{Agent: "boss"})
			require.NoError(t, env.GetWorkflowError())
			var got rt.Result
			require.NoError(t, env.GetWorkflowResult(&got))
			assert.Empty(t, cmp.Diff(want.Transcript, transcriptOf(&got)), "transcript mismatch (-want +got)")
			require.Equal(t, fmt.Sprintf(`{"asked":%d}`, wantState), string(got.State))
			if child {
				require.Equal(t, 2, children, "the two valid sub-agent calls")
			} else {
				require.Zero(t, children)
			}
		})
	}
}
