// Command agent runs a to-do agent as a Temporal workflow: start workers,
// start the agent, send it messages, read its state, approve or deny the
// removal of a task (a tool that needs approval). It needs a Temporal
// server (`temporal server start-dev`, or `eval "$(bash .ci/temporal.sh)"`
// from the repository's root).
//
//	go run ./examples/agent worker                 # a worker; start two, in two terminals
//	go run ./examples/agent start -id todo         # the agent, waiting an hour for messages
//	go run ./examples/agent send -id todo "Buy milk"
//	go run ./examples/agent status -id todo        # its state and last steps
//	go run ./examples/agent send -id todo "Remove Buy milk"
//	go run ./examples/agent status -id todo        # awaiting: call_3 remove_task {"task":"Buy milk"}
//	go run ./examples/agent approve -id todo call_3   # or: deny -id todo call_3 "Keep it."
//	go run ./examples/agent demo                   # all of it in one process
//
// The model is a rule-based stand-in that works offline: it adds each new
// user message as a task ("Remove X" asks to remove X), then answers with
// the list. With OPENAI_API_KEY
// or OPENAI_BASE_URL set, the workers use a real model (providers/openai).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/providers/openai"
	"github.com/reprompt/reprompt/runtime"
	rt "github.com/reprompt/reprompt/temporal"
)

const queue = "reprompt-todo"

type addArgs struct {
	Task string `json:"task" jsonschema:"the task to add"`
}

// todo is the prompt function: a list of tasks in state, a tool to add one.
func todo(p *prompt.Prompt) error {
	tasks, setTasks := prompt.State(p, "tasks", []string{})
	p.DefSystem("role", "You keep a to-do list. Add what the user asks for with add_task, then say what is on the list.")
	p.DefData("tasks", tasks)
	prompt.DefTool(p, "add_task", "Add a task to the list.", func(ctx context.Context, a addArgs) (string, error) {
		setTasks.Update(ctx, func(l []string) []string { return append(append([]string(nil), l...), a.Task) })
		return "added " + a.Task, nil
	}, prompt.Idempotent())
	prompt.DefTool(p, "remove_task", "Remove a task from the list.", func(ctx context.Context, a addArgs) (string, error) {
		if !slices.Contains(tasks, a.Task) {
			return "", fmt.Errorf("no task %q", a.Task)
		}
		setTasks.Update(ctx, func(l []string) []string {
			return slices.DeleteFunc(slices.Clone(l), func(t string) bool { return t == a.Task })
		})
		return "removed " + a.Task, nil
	}, prompt.NeedsApproval()) // a person decides: approve or deny
	return nil
}

// rules is the offline model: a new user message becomes an add_task call;
// after the result, it answers with the list the request shows.
type rules struct{}

func (rules) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == defs.RoleUser { // none before the first message
		tool, task := "add_task", req.Messages[n-1].Content
		if rest, ok := strings.CutPrefix(task, "Remove "); ok {
			tool, task = "remove_task", rest
		}
		args := fmt.Sprintf(`{"task":%q}`, task)
		return &llm.Reply{Message: defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{
			{ID: fmt.Sprintf("call_%d", req.Step), Name: tool, Arguments: []byte(args)}}}}, nil
	}
	list, _, _ := strings.Cut(req.System[strings.Index(req.System, "<tasks>")+len("<tasks>"):], "</tasks>")
	return &llm.Reply{Message: defs.Message{Role: defs.RoleAssistant, Content: "The list:" + strings.Join(strings.Fields(list), " ")}}, nil
}

func model() llm.Model {
	if os.Getenv("OPENAI_API_KEY") != "" || os.Getenv("OPENAI_BASE_URL") != "" {
		return openai.FromEnv()
	}
	return rules{}
}

func agent() rt.Agent {
	return rt.Agent{Name: "todo", Prompt: todo, Model: model(), Config: runtime.Config{MaxSteps: 1000}}
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: agent worker|start|send|status|approve|deny|demo [-addr host:port] [-id id] [text | call-id [reason]]")
		os.Exit(2)
	}
	cmd := os.Args[1]
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	addr := fs.String("addr", envOr("REPROMPT_TEMPORAL_ADDR", client.DefaultHostPort), "the Temporal server")
	id := fs.String("id", "todo", "the agent's workflow id")
	_ = fs.Parse(os.Args[2:])
	c, err := client.Dial(client.Options{HostPort: *addr, Logger: quiet()})
	if err != nil {
		fail(err)
	}
	defer c.Close()
	ctx := context.Background()
	switch cmd {
	case "worker":
		err = runWorker(c)
	case "start":
		_, err = rt.Start(ctx, c, client.StartWorkflowOptions{ID: *id, TaskQueue: queue}, rt.Input{Agent: "todo", Idle: time.Hour})
		if err == nil {
			fmt.Println("started", *id)
		}
	case "send":
		err = rt.Send(ctx, c, *id, strings.Join(fs.Args(), " "))
	case "status":
		err = printStatus(ctx, os.Stdout, c, *id)
	case "approve", "deny":
		if fs.NArg() == 0 {
			err = fmt.Errorf("%s: which call? (status lists those awaiting a decision)", cmd)
			break
		}
		err = rt.Decide(ctx, c, *id, fs.Arg(0), cmd == "approve", strings.Join(fs.Args()[1:], " "))
	case "demo":
		err = demo(ctx, os.Stdout, c, fmt.Sprintf("todo-demo-%d", time.Now().UnixNano()))
	default:
		err = fmt.Errorf("unknown command %q", cmd)
	}
	if err != nil {
		fail(err)
	}
}

func runWorker(c client.Client) error {
	w := worker.New(c, queue, worker.Options{})
	if err := rt.Register(w, agent()); err != nil {
		return err
	}
	return w.Run(worker.InterruptCh())
}

func printStatus(ctx context.Context, out io.Writer, c client.Client, id string) error {
	st, err := rt.Query(ctx, c, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "step %d, waiting %t, state %s\n", st.Step, st.Waiting, st.State)
	for _, a := range st.Awaiting {
		fmt.Fprintf(out, "awaiting: %s %s %s\n", a.CallID, a.Tool, a.Arguments)
	}
	for _, s := range st.Steps {
		if len(s.Awaiting) > 0 {
			fmt.Fprintf(out, "  step %d: paused for %s\n", s.Number, strings.Join(s.Awaiting, ", "))
		}
		for _, d := range s.Decisions {
			if d.Approve {
				fmt.Fprintf(out, "  step %d: %s approved\n", s.Number, d.CallID)
			} else {
				fmt.Fprintf(out, "  step %d: %s denied: %s\n", s.Number, d.CallID, d.Reason)
			}
		}
		for _, r := range s.ToolResults {
			fmt.Fprintf(out, "  step %d: %s → %s\n", s.Number, r.Name, r.Content)
		}
		if s.Reply.Content != "" {
			fmt.Fprintf(out, "  step %d: %s\n", s.Number, s.Reply.Content)
		}
	}
	return nil
}

// demo starts a worker, an agent that waits a second for messages, sends
// it two, asks it to remove one and approves the removal, prints its
// status and its result.
func demo(ctx context.Context, out io.Writer, c client.Client, id string) error {
	q := queue + "-" + id
	w := worker.New(c, q, worker.Options{})
	if err := rt.Register(w, agent()); err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return err
	}
	defer w.Stop()
	run, err := rt.Start(ctx, c, client.StartWorkflowOptions{ID: id, TaskQueue: q}, rt.Input{Agent: "todo", Message: "Buy milk", Idle: time.Second})
	if err != nil {
		return err
	}
	if err := waitIdle(ctx, c, id, 2); err != nil {
		return err
	}
	if err := rt.Send(ctx, c, id, "Call Bob"); err != nil {
		return err
	}
	if err := waitIdle(ctx, c, id, 4); err != nil {
		return err
	}
	if err := rt.Send(ctx, c, id, "Remove Buy milk"); err != nil {
		return err
	}
	call, err := waitAwaiting(ctx, c, id)
	if err != nil {
		return err
	}
	if err := printStatus(ctx, out, c, id); err != nil {
		return err
	}
	if err := rt.Decide(ctx, c, id, call, true, ""); err != nil {
		return err
	}
	if err := waitIdle(ctx, c, id, 6); err != nil {
		return err
	}
	if err := printStatus(ctx, out, c, id); err != nil {
		return err
	}
	var res rt.Result
	if err := run.Get(ctx, &res); err != nil {
		return err
	}
	fmt.Fprintf(out, "result after %d steps: %s\n", res.Steps, res.Text)
	return nil
}

// waitIdle waits until the agent's run has ended at step and it waits for
// a message.
func waitIdle(ctx context.Context, c client.Client, id string, step int) error {
	for range 3000 { // a minute at most
		st, err := rt.Query(ctx, c, id)
		if err == nil && st.Waiting && st.Step >= step {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("agent %s did not finish its run", id)
}

// waitAwaiting waits until the agent's run pauses for a decision, and
// returns the id of the call it awaits one on.
func waitAwaiting(ctx context.Context, c client.Client, id string) (string, error) {
	for range 3000 { // a minute at most
		st, err := rt.Query(ctx, c, id)
		if err == nil && len(st.Awaiting) > 0 {
			return st.Awaiting[0].CallID, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "", fmt.Errorf("agent %s did not pause for a decision", id)
}

func quiet() sdklog.Logger {
	return sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "agent:", err)
	os.Exit(1)
}
