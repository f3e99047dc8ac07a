package temporal

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
)

// Names of the workflow, its activities, signal and query, as a worker
// registers them and a client addresses them (the update is UpdateDecide).
const (
	// WorkflowName is the agent workflow: input Input, result *Result.
	WorkflowName = "reprompt.Agent"
	// ActivityGenerate is a model call (a step, or a summary an effect
	// asked for).
	ActivityGenerate = "reprompt.Generate"
	// ActivityTool is one tool call.
	ActivityTool = "reprompt.Tool"
	// SignalMessage adds a user message (a string) to a running agent.
	SignalMessage = "reprompt.message"
	// QueryStatus returns a running agent's *Status.
	QueryStatus = "reprompt.status"
)

// Defaults of Agent.
const (
	// DefaultContinueAfter is the number of steps after which a workflow
	// continues as new, when Agent.ContinueAfter is zero. A step adds
	// about 10 events to the history (more with parallel tool calls), and
	// each model activity's input holds the transcript: 50 steps keep a
	// history well under Temporal's limits of events and bytes. A workflow
	// also continues as new when the server suggests it.
	DefaultContinueAfter = 50
	// DefaultLastSteps is how many step records a Status holds.
	DefaultLastSteps = 10
	// DefaultModelTimeout bounds one model call (the activity's
	// start-to-close timeout) when Agent.Config.ModelTimeout is zero.
	DefaultModelTimeout = 10 * time.Minute
	// DefaultToolTimeout bounds one tool call when neither ToolOptions nor
	// Agent.Config.ToolTimeout says otherwise.
	DefaultToolTimeout = 10 * time.Minute
	// DefaultHeartbeat is the heartbeat timeout of model activities and,
	// unless ToolOptions say otherwise, of tool activities: a worker that
	// dies in a call is noticed after it. The activity heartbeats on its
	// own while the call runs.
	DefaultHeartbeat = 10 * time.Second
	// DefaultAttempts is how many times an idempotent tool's call, or a
	// model call, is attempted at most.
	DefaultAttempts = 5
)

// Agent is a prompt function a worker runs as a workflow. Register it with
// a worker (Register), start it with a client (Start).
type Agent struct {
	// Name names the agent: Input.Agent selects it, and it is the run's
	// Config.Name. It must not be empty.
	Name string
	// Prompt is the prompt function. It runs in workflow code, and in tool
	// activities (which execute it again to find the tool a call names): it
	// must be deterministic (see the package documentation).
	Prompt prompt.Func
	// Model answers the model activity, on the worker. Sub-agents declared
	// with DefAgent run inside their tool's activity against it.
	Model llm.Model
	// Config configures the run. In workflow code the runtime makes no
	// retries of its own (Temporal's retry policies do: see ModelRetry)
	// and writes no checkpoints to Config.Store (the workflow's history is
	// the durable record); Config.Summarizer answers summary requests in
	// the model activity; ModelTimeout is the model activity's
	// start-to-close timeout and ToolTimeout the default of the tools';
	// OnDelta, Logger and TracerProvider are not used in workflow code.
	Config runtime.Config
	// ModelRetry is the retry policy of the model activity. Nil means
	// DefaultAttempts attempts from one second, doubling; a
	// *llm.ModelError that is not Retryable is not retried.
	ModelRetry *temporal.RetryPolicy
	// Tools sets the activity options of a tool's calls, by tool name.
	// Tools not named get the zero ToolOptions.
	Tools map[string]ToolOptions
	// ContinueAfter is the number of steps after which the workflow
	// continues as new; zero means DefaultContinueAfter.
	ContinueAfter int
	// LastSteps is how many step records Status holds; zero means
	// DefaultLastSteps.
	LastSteps int
}

// ToolOptions are the activity options of one tool's calls. The zero
// ToolOptions retries a tool declared prompt.Idempotent up to
// DefaultAttempts times and runs any other tool at most once: a call whose
// activity fails (its worker died, it timed out) gets an error result
// saying that it was interrupted and not run again.
type ToolOptions struct {
	// Timeout is the activity's start-to-close timeout; zero means
	// Agent.Config.ToolTimeout, or DefaultToolTimeout.
	Timeout time.Duration
	// Heartbeat is the activity's heartbeat timeout; zero means
	// DefaultHeartbeat.
	Heartbeat time.Duration
	// Retry, if set, is the activity's retry policy, whether the tool is
	// idempotent or not.
	Retry *temporal.RetryPolicy
}

// Register registers the agent workflow and its activities with w, for
// agents. Every worker of a task queue must register the same agents. It
// returns an error for an agent without a name, prompt or model, or a
// name given twice.
func Register(w worker.Registry, agents ...Agent) error {
	reg, err := newRegistry(agents)
	if err != nil {
		return err
	}
	w.RegisterWorkflowWithOptions(reg.run, workflow.RegisterOptions{Name: WorkflowName})
	w.RegisterActivityWithOptions(reg.generate, activity.RegisterOptions{Name: ActivityGenerate})
	w.RegisterActivityWithOptions(reg.tool, activity.RegisterOptions{Name: ActivityTool})
	return nil
}

func newRegistry(agents []Agent) (*registry, error) {
	reg := &registry{agents: make(map[string]*Agent, len(agents))}
	for i := range agents {
		a := &agents[i]
		switch {
		case a.Name == "":
			return nil, fmt.Errorf("temporal: agent %d has no name", i)
		case a.Prompt == nil:
			return nil, fmt.Errorf("temporal: agent %q has no prompt function", a.Name)
		case a.Model == nil:
			return nil, fmt.Errorf("temporal: agent %q has no model", a.Name)
		}
		if _, dup := reg.agents[a.Name]; dup {
			return nil, fmt.Errorf("temporal: agent %q is registered twice", a.Name)
		}
		reg.agents[a.Name] = a
	}
	return reg, nil
}

// RegisterWorkflow registers the agent workflow only, for agents, with a
// registry that takes workflows alone, such as a worker.WorkflowReplayer:
// replaying histories runs no activity.
func RegisterWorkflow(w interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
}, agents ...Agent) error {
	reg, err := newRegistry(agents)
	if err != nil {
		return err
	}
	w.RegisterWorkflowWithOptions(reg.run, workflow.RegisterOptions{Name: WorkflowName})
	return nil
}

// registry is the agents of one worker.
type registry struct {
	agents map[string]*Agent
}

// UnknownAgentError is an Input naming an agent the worker did not
// register.
type UnknownAgentError struct{ Agent string }

func (e *UnknownAgentError) Error() string {
	return fmt.Sprintf("temporal: agent %q is not registered with this worker", e.Agent)
}

func (r *registry) agent(name string) (*Agent, error) {
	a, ok := r.agents[name]
	if !ok {
		return nil, temporal.NewNonRetryableApplicationError((&UnknownAgentError{Agent: name}).Error(), "UnknownAgentError", nil)
	}
	return a, nil
}

// Input starts an agent workflow. The zero values of its fields other than
// Agent are the defaults.
type Input struct {
	// Agent is the name of a registered Agent.
	Agent string `json:"agent"`
	// Message, if not empty, is a user message added at the first step,
	// as if sent with Send before it.
	Message string `json:"message,omitempty"`
	// Task, if not empty, runs the agent as a sub-agent with this task
	// (runtime.NewAgent): how a tool declared with DefAgent starts a child
	// workflow. Such a run never continues as new and completes when it
	// ends.
	Task string `json:"task,omitempty"`
	// Idle is how long the workflow waits for a message (Send) once the
	// run has ended, a reply without tool calls; a message continues the
	// run, which then ends again at the next such reply. Zero means the
	// workflow completes when the run ends.
	Idle time.Duration `json:"idle,omitempty"`

	// What continue-as-new carries; empty at the start.

	// Checkpoint is the session checkpoint to continue from.
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
	// Inbox holds messages received and not yet added.
	Inbox []Inbound `json:"inbox,omitempty"`
	// Received counts the messages received before.
	Received int `json:"received,omitempty"`
	// Steps are the last step records.
	Steps []StepRecord `json:"steps,omitempty"`
}

// Inbound is a user message received by signal, numbered from 0 in the
// order the workflow received it.
type Inbound struct {
	N    int    `json:"n"`
	Text string `json:"text"`
}

// Result is what an agent workflow returns when the run has ended.
type Result struct {
	// Text is the content of the last reply.
	Text string `json:"text"`
	// Steps is the number of steps of the run, across continue-as-new.
	Steps int `json:"steps"`
	// Transcript is the final transcript.
	Transcript []Message `json:"transcript"`
	// State is the state as JSON (state.Store's encoding).
	State json.RawMessage `json:"state"`
	// Usage sums the usage of every model call.
	Usage llm.Usage `json:"usage"`
}

// Status is what QueryStatus returns: a running agent's state and last
// steps.
type Status struct {
	Agent string `json:"agent"`
	// Step is the number of the next step.
	Step int `json:"step"`
	// Waiting reports that the run has ended and the workflow waits for a
	// message (Input.Idle).
	Waiting bool `json:"waiting"`
	// State is the state as JSON (state.Store's encoding).
	State json.RawMessage `json:"state"`
	// Steps are the records of the last steps, oldest first.
	Steps []StepRecord `json:"steps"`
	// Inbox is the number of messages received and not yet added.
	Inbox int `json:"inbox"`
	// Transcript is the number of messages in the transcript.
	Transcript int `json:"transcript"`
	// Awaiting are the tool calls the paused run awaits a decision on
	// (Decide), in call order; empty unless paused.
	Awaiting []Approval `json:"awaiting,omitempty"`
}

// StepRecord is a step as Status reports it.
type StepRecord struct {
	Number      int          `json:"number"`
	Reply       Message      `json:"reply"`
	ToolResults []ToolResult `json:"tool_results,omitempty"`
	Effects     []string     `json:"effects,omitempty"`
	InputTokens int          `json:"input_tokens"`
	Usage       llm.Usage    `json:"usage"`
	Done        bool         `json:"done,omitempty"`
	// Awaiting are the ids of the calls the step paused for; a later
	// record of the same Number completes it, with the Decisions taken.
	Awaiting  []string   `json:"awaiting,omitempty"`
	Decisions []Decision `json:"decisions,omitempty"`
}

// ToolResult is a tool result in a StepRecord.
type ToolResult struct {
	CallID  string `json:"call_id"`
	Name    string `json:"name"`
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
}

// Start starts an agent workflow with c, and returns the run: its Get
// returns the *Result. opts.ID names the agent (the session id of its
// checkpoints); opts.TaskQueue must be one the agent's workers poll.
func Start(ctx context.Context, c client.Client, opts client.StartWorkflowOptions, in Input) (client.WorkflowRun, error) {
	return c.ExecuteWorkflow(ctx, opts, WorkflowName, in)
}

// Send adds a user message to the running agent workflowID. It is added at
// the agent's next step, after the messages sent before it; an agent
// waiting after its run ended (Input.Idle) continues.
func Send(ctx context.Context, c client.Client, workflowID, text string) error {
	return c.SignalWorkflow(ctx, workflowID, "", SignalMessage, text)
}

// Query returns the status of the agent workflowID: its state and last
// steps.
func Query(ctx context.Context, c client.Client, workflowID string) (*Status, error) {
	v, err := c.QueryWorkflow(ctx, workflowID, "", QueryStatus)
	if err != nil {
		return nil, err
	}
	var st Status
	if err := v.Get(&st); err != nil {
		return nil, err
	}
	return &st, nil
}
