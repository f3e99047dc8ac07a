package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// Task is one item of the to-do list kept in state.
type Task struct {
	Title string `json:"title"`
	Done  bool   `json:"done"`
}

type taskArgs struct {
	Title string `json:"title" jsonschema:"the task's title"`
}

type noteArgs struct {
	Text string `json:"text" jsonschema:"the note"`
}

func open(tasks []Task) int {
	n := 0
	for _, t := range tasks {
		if !t.Done {
			n++
		}
	}
	return n
}

// Todo is the quickstart's prompt function, a to-do agent. It is executed
// again before every step.
func Todo(p *prompt.Prompt) error {
	tasks, setTasks := prompt.State(p, "tasks", []Task{})
	notes, setNotes := prompt.State(p, "notes", []string{})

	p.DefSystem("role", "You are a to-do assistant. Plan the user's request as tasks, then work through them.")
	p.DefSystem("rules", "Add each task with add_task, mark it done with complete_task, and answer when none is left.")
	p.DefData("tasks", tasks)
	notesVar := p.DefData("notes", notes)

	prompt.DefTool(p, "add_task", "Add a task to the list.",
		func(ctx context.Context, a taskArgs) (string, error) {
			setTasks.Update(ctx, func(ts []Task) []Task {
				ts = append(slices.Clone(ts), Task{Title: a.Title})
				slices.SortFunc(ts, func(a, b Task) int { return strings.Compare(a.Title, b.Title) })
				return ts
			})
			return "added " + a.Title, nil
		})
	complete := prompt.DefTool(p, "complete_task", "Mark a task as done.",
		func(ctx context.Context, a taskArgs) (string, error) {
			found := false
			setTasks.Update(ctx, func(ts []Task) []Task {
				i := slices.IndexFunc(ts, func(t Task) bool { return t.Title == a.Title })
				if i < 0 {
					return ts
				}
				found = true
				ts = slices.Clone(ts)
				ts[i].Done = true
				return ts
			})
			if !found {
				return "", fmt.Errorf("no task %q", a.Title)
			}
			return a.Title + " done", nil
		})
	prompt.DefTool(p, "note", "Write down a short note for the user.",
		func(ctx context.Context, a noteArgs) (string, error) {
			setNotes.Update(ctx, func(ns []string) []string { return append(slices.Clone(ns), a.Text) })
			return "noted", nil
		})

	// No dependency list: runs at every step. With nothing open,
	// complete_task is not offered (for this step only).
	p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
		if open(tasks) == 0 {
			complete.Disable()
		}
		return nil
	})
	// Runs at the first step and whenever the number of open tasks changes:
	// when the last one is done, the model is reminded of the list.
	p.Effect(effects.On(effects.Named("open", open(tasks))), func(ctx context.Context, s *effects.Step) error {
		if len(tasks) > 0 && open(tasks) == 0 {
			if h, ok := s.Variables.Handle("tasks"); ok {
				h.Remind()
			}
		}
		return nil
	})
	// Runs at the first step and whenever a note was added: the model is
	// reminded to pass the notes on.
	p.Effect(effects.On(effects.Named("notes", len(notes))), func(ctx context.Context, s *effects.Step) error {
		if len(notes) > 0 {
			notesVar.Remind()
		}
		return nil
	})

	p.User("Plan my Saturday: buy groceries and call grandma.")
	return nil
}

// TodoScript is the scripted model the quickstart runs on: the replies a
// real model could give to Todo.
func TodoScript() *snapshots.Model {
	return snapshots.Script(
		snapshots.CallTools( // two calls in one reply: they run concurrently
			snapshots.Call{Name: "add_task", Args: taskArgs{Title: "buy groceries"}},
			snapshots.Call{Name: "add_task", Args: taskArgs{Title: "call grandma"}},
		),
		snapshots.CallTool("complete_task", taskArgs{Title: "buy groceries"}),
		snapshots.CallTool("complete_task", map[string]any{"title": 42}), // a bad argument
		snapshots.CallTool("complete_task", taskArgs{Title: "call grandma"}),
		snapshots.CallTool("complete_task", taskArgs{Title: "call grandma"}), // disabled now: not run
		snapshots.CallTool("note", noteArgs{Text: "grandma's birthday is next week"}),
		snapshots.Text("All done: groceries bought and grandma called. Note: her birthday is next week."),
	)
}

// RunTodo runs Todo on model with cfg and prints to w what happens at each
// step; about describes the model in the first line. It returns the run's
// error, after printing the steps before it.
func RunTodo(ctx context.Context, w io.Writer, model llm.Model, about string, cfg runtime.Config) error {
	fmt.Fprintln(w, "reprompt quickstart: a to-do agent on the "+about+".")
	fmt.Fprintln(w, "The prompt function runs again before every step; effects run when their dependencies change.")
	r := runtime.New(model, Todo, cfg)
	prev := map[string]string{}
	steps := 0
	for step, err := range r.All(ctx) {
		if step != nil {
			printStep(w, step, prev)
			steps++
		}
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "── done after %d steps, %d messages in the transcript ──\n", steps, len(r.Transcript()))
	return nil
}

func printStep(w io.Writer, s *runtime.Step, prev map[string]string) {
	fmt.Fprintf(w, "── step %d ──\n", s.Number)
	for _, e := range s.Effects {
		fmt.Fprintf(w, "  effect %-3s %-20s ran: %s\n", e.ID, "("+e.Site+")", e.Reason)
	}
	for _, d := range s.Disabled {
		fmt.Fprintf(w, "  disabled  %s\n", d)
	}
	for _, d := range s.Reminded {
		fmt.Fprintf(w, "  reminded  %s\n", d)
	}
	if req := s.Request(); req != nil {
		names := make([]string, len(req.Tools))
		for i, t := range req.Tools {
			names[i] = t.Name
		}
		fmt.Fprintf(w, "  request   %d messages, tools [%s]\n", len(req.Messages), strings.Join(names, ", "))
	}
	for i, res := range s.ToolResults {
		mark := "→"
		if res.IsError {
			mark = "✗"
		}
		fmt.Fprintf(w, "  call      %s(%s) %s %s\n", res.Name, s.Reply.Message.ToolCalls[i].Arguments, mark, res.Content)
	}
	if s.Reply != nil && s.Reply.Message.Content != "" {
		fmt.Fprintf(w, "  answer    %s\n", s.Reply.Message.Content)
	}
	keys := make([]string, 0, len(s.State))
	for k := range s.State {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b, _ := json.Marshal(s.State[k])
		if prev[k] != string(b) {
			fmt.Fprintf(w, "  state     %s = %s\n", k, b)
			prev[k] = string(b)
		}
	}
}
