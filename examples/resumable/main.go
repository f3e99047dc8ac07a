// Command resumable runs a session that survives a crash: every step is
// checkpointed in an SQLite file, and running the same command again
// resumes where the last run stopped.
//
//	go run ./examples/resumable -crash-at 3   # exits hard (status 3) in the middle of step 3
//	go run ./examples/resumable -crash-at 3   # resumes at step 3 and finishes
//	go run ./examples/resumable -fresh        # starts the session over
//
// The model is a deterministic stand-in that counts the words of five
// chapters with a tool, one chapter per step, then answers; it needs no
// network. -crash-at N makes a run that started the session (not one that
// resumed it) call os.Exit(3) inside the tool call of step N, after the
// model's reply was checkpointed: the resumed run completes that step,
// running the idempotent tool again, and goes on.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/sqlite"
)

var chapters = []string{
	"It was a bright cold day in April",
	"The sky above the port was the color of television",
	"Call me Ishmael",
	"All happy families are alike",
	"It is a truth universally acknowledged",
}

type countArgs struct {
	Chapter int `json:"chapter" jsonschema:"the chapter number, from 1"`
}

// agent is the prompt function: it keeps the counts in state.
func agent(crashAt int, canCrash *bool) prompt.Func {
	return func(p *prompt.Prompt) error {
		counts, setCounts := prompt.State(p, "counts", map[string]int{})
		p.DefSystem("role", "Count the words of each chapter with count_words, then give the total.")
		p.DefData("counts", counts)
		step := p.Step()
		prompt.DefTool(p, "count_words", "Count the words of a chapter.",
			func(ctx context.Context, a countArgs) (int, error) {
				if a.Chapter < 1 || a.Chapter > len(chapters) {
					return 0, fmt.Errorf("no chapter %d", a.Chapter)
				}
				n := len(strings.Fields(chapters[a.Chapter-1]))
				setCounts.Update(ctx, func(m map[string]int) map[string]int {
					out := make(map[string]int, len(m)+1)
					for k, v := range m {
						out[k] = v
					}
					out[fmt.Sprint(a.Chapter)] = n
					return out
				})
				if *canCrash && step == crashAt {
					fmt.Printf("  crashing hard in the middle of step %d (os.Exit(3)); run the same command again to resume\n", step)
					os.Exit(3)
				}
				return n, nil
			}, prompt.Idempotent())
		p.User(fmt.Sprintf("How many words do the %d chapters have?", len(chapters)))
		return nil
	}
}

// model is a deterministic stand-in for a language model: its reply depends
// only on the request, so a resumed run gets the replies an uninterrupted
// one would.
type model struct{}

func (model) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	asked, total := 0, 0
	for _, m := range req.Messages {
		switch m.Role {
		case defs.RoleAssistant:
			asked += len(m.ToolCalls)
		case defs.RoleTool:
			var n int
			if json.Unmarshal([]byte(m.Content), &n) == nil {
				total += n
			}
		}
	}
	if asked < len(chapters) {
		ch := asked + 1
		return &llm.Reply{Message: defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{
			ID: fmt.Sprintf("call-%d", ch), Name: "count_words", Arguments: json.RawMessage(fmt.Sprintf(`{"chapter":%d}`, ch)),
		}}}, Usage: llm.Usage{InputTokens: 50, OutputTokens: 8}}, nil
	}
	return &llm.Reply{Message: defs.AssistantMessage(fmt.Sprintf("The %d chapters have %d words.", len(chapters), total)),
		Usage: llm.Usage{InputTokens: 60, OutputTokens: 12}}, nil
}

func main() {
	dbPath := flag.String("db", filepath.Join(os.TempDir(), "reprompt-resumable.db"), "SQLite file holding the sessions")
	id := flag.String("session", "demo", "session id")
	crashAt := flag.Int("crash-at", -1, "exit hard (status 3) in the middle of this step, in a run that starts the session")
	fresh := flag.Bool("fresh", false, "delete the session and start over")
	flag.Parse()
	if err := run(*dbPath, *id, *crashAt, *fresh); err != nil {
		fmt.Fprintln(os.Stderr, "resumable:", err)
		os.Exit(1)
	}
}

func run(dbPath, id string, crashAt int, fresh bool) error {
	ctx := context.Background()
	st, err := sqlite.Open(dbPath)
	if err != nil {
		return err
	}
	defer st.Close()
	if fresh {
		if err := st.Delete(ctx, id); err != nil {
			return err
		}
	}
	canCrash := false
	cfg := runtime.Config{Store: st, SessionID: id, MaxSteps: 20}
	fn := agent(crashAt, &canCrash)

	var r *runtime.Runner
	cp, err := st.Latest(ctx, id)
	switch {
	case errors.Is(err, session.ErrNotFound):
		fmt.Printf("new session %q in %s\n", id, dbPath)
		canCrash = true
		r = runtime.New(model{}, fn, cfg)
	case err != nil:
		return err
	case cp.Done:
		fmt.Printf("session %q already finished at step %d: %s\n(use -fresh to start over)\n", id, cp.Step, lastText(cp.Transcript))
		return nil
	default:
		if r, err = runtime.Resume(ctx, model{}, fn, cfg); err != nil {
			return err
		}
		step, _ := r.ResumedAt()
		fmt.Printf("resumed session %q at step %d (checkpoint %d, %d messages, state %s)\n", id, step, cp.Seq, len(cp.Transcript), cp.State)
		if p := cp.Pending; p != nil {
			fmt.Printf("  step %d was interrupted after the model's reply: %d of %d tool results saved\n", step, len(p.Results), len(p.Reply.ToolCalls))
		}
	}
	for s, err := range r.All(ctx) {
		if err != nil {
			return err
		}
		for _, res := range s.ToolResults {
			fmt.Printf("  step %d: %s(%s) = %s\n", s.Number, res.Name, res.Arguments, res.Content)
		}
		if s.Done && s.Reply != nil {
			fmt.Printf("  step %d: %s\n", s.Number, s.Reply.Message.Content)
		}
	}
	fmt.Println("done")
	return nil
}

func lastText(msgs []defs.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == defs.RoleAssistant && msgs[i].Content != "" {
			return msgs[i].Content
		}
	}
	return ""
}
