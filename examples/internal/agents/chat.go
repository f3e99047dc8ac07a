package agents

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
)

// maxTurnSteps bounds the steps of one turn of the chat. Config.MaxSteps
// bounds the steps of the whole conversation, so RunChat sets it to no
// limit and ends a turn whose model still calls tools after this many
// steps (StopWhen).
const maxTurnSteps = 8

// rememberArgs are the arguments of the chat's remember tool.
type rememberArgs struct {
	Note string `json:"note" jsonschema:"what to remember, in a few words"`
}

// ChatOptions configure Chat and RunChat.
type ChatOptions struct {
	DB      string // the store's file, named in RunChat's first line
	Session string // the session id
	TTY     bool   // the input is a terminal: prompt, do not echo
	// ToolLog, if not empty, names a file to which every run of a tool
	// appends a line "tool call-id argument", synced, before the tool
	// does anything (for tests).
	ToolLog string
	// Hang, if not empty, names a tool whose calls, once logged, wait
	// until the run is cancelled or the process killed (for tests).
	Hang string
}

// Chat returns examples/chat's prompt function: a terse assistant that
// keeps the user's notes in state, offers the remember and recall tools,
// reminds the model of the notes whenever one was added (an effect whose
// dependency is the number of notes), and declares the turn's question as
// a variable (Prompt.Turn). It is executed again before every step, with
// the state, the turn and the effects' memory carried over.
func Chat(o ChatOptions) prompt.Func {
	return func(p *prompt.Prompt) error {
		notes, setNotes := prompt.State(p, "notes", []string{}) // kept across turns and restarts
		turn := p.Turn()

		p.DefSystem("role", "You are a terse assistant in a terminal chat.")
		p.DefSystem("rules", "When the user asks you to remember something, call remember. "+
			"When they ask what they asked you to remember, call recall. Answer in one line.")
		notesVar := p.Def("notes", strings.Join(notes, "; "))
		// Turn-specific definitions: the question of this turn, and its number.
		p.Def("question", turn.Message)
		p.Def("turn", strconv.Itoa(turn.Number+1))

		// Not idempotent: run twice, it would keep the note twice. After a
		// crash in the middle of a call, the call is not run again.
		prompt.DefTool(p, "remember", "Remember a note for the user, across turns and restarts.",
			func(ctx context.Context, a rememberArgs) (string, error) {
				if err := o.ran(ctx, "remember", a.Note); err != nil {
					return "", err
				}
				note := strings.TrimSpace(a.Note)
				if note == "" {
					return "", errors.New("nothing to remember")
				}
				setNotes.Update(ctx, func(ns []string) []string { return append(slices.Clone(ns), note) })
				return note, nil
			})
		prompt.DefTool(p, "recall", "List the notes the user asked you to remember.",
			func(ctx context.Context, _ struct{}) ([]string, error) {
				if err := o.ran(ctx, "recall", ""); err != nil {
					return nil, err
				}
				return slices.Clone(notes), nil
			}, prompt.Idempotent())

		// Runs at the first step and whenever the number of notes changed:
		// once a note was added, the request reminds the model of them.
		p.Effect(effects.On(effects.Named("notes", len(notes))), func(ctx context.Context, s *effects.Step) error {
			if len(notes) > 0 {
				notesVar.Remind()
			}
			return nil
		})
		return nil
	}
}

// ran is called by each tool first: see ChatOptions.ToolLog and Hang.
func (o ChatOptions) ran(ctx context.Context, tool, arg string) error {
	if o.ToolLog != "" {
		f, err := os.OpenFile(o.ToolLog, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(f, "%s %s %s\n", tool, prompt.CallID(ctx), arg)
		err = errors.Join(err, f.Sync(), f.Close())
		if err != nil {
			return err
		}
	}
	if o.Hang == tool {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

// RunChat runs Chat on model, in session o.Session of st: it resumes the
// session or starts it, finishes a turn left unfinished, then runs a turn
// for each line of in until in ends, printing to out each turn's tool
// calls and answer; about describes the model in the first line.
func RunChat(ctx context.Context, st session.Store, model llm.Model, about string, o ChatOptions, in io.Reader, out io.Writer) error {
	turnSteps, stepTurn := 0, -1
	cfg := runtime.Config{
		Store: st, SessionID: o.Session,
		MaxSteps: -1, // a limit of the whole conversation: see maxTurnSteps
		StopWhen: func(last *runtime.Step) bool {
			if last.Turn != stepTurn {
				turnSteps, stepTurn = 0, last.Turn
			}
			turnSteps++
			return turnSteps >= maxTurnSteps
		},
	}
	fn := Chat(o)

	var r *runtime.Runner
	cp, err := st.Latest(ctx, o.Session)
	switch {
	case errors.Is(err, session.ErrNotFound):
		fmt.Fprintf(out, "chat: new session %q in %s, on the %s\n", o.Session, o.DB, about)
		r = runtime.New(model, fn, cfg)
	case err != nil:
		return err
	default:
		if r, err = runtime.Resume(ctx, model, fn, cfg); err != nil {
			return err
		}
		n, msg := r.Turn()
		fmt.Fprintf(out, "chat: resumed session %q in %s: %d turns, on the %s\n", o.Session, o.DB, n+1, about)
		if !cp.Done { // the last process died inside a turn: finish it first
			fmt.Fprintf(out, "chat: turn %d (%q) was cut short; finishing it\n", n+1, msg)
			res, err := r.Run(ctx)
			if err != nil {
				return err
			}
			printTurn(out, res)
		}
	}
	defer r.Close()

	lines := make(chan string)
	go func() { // a goroutine, so that an interrupt does not wait for a line
		defer close(lines)
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	for {
		if o.TTY {
			fmt.Fprint(out, "you> ")
		}
		var line string
		var ok bool
		select {
		case line, ok = <-lines:
		case <-ctx.Done():
			return ctx.Err()
		}
		if !ok {
			if o.TTY {
				fmt.Fprintln(out)
			}
			return nil
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if !o.TTY {
			fmt.Fprintf(out, "you> %s\n", line)
		}
		res, err := r.Continue(ctx, line)
		if err != nil {
			return err
		}
		printTurn(out, res)
	}
}

// printTurn prints the tool calls of a turn's steps, one line each, then
// its answer.
func printTurn(out io.Writer, res *runtime.Result) {
	for _, s := range res.Steps {
		for _, tr := range s.ToolResults {
			result := tr.Content
			if tr.IsError && !strings.HasPrefix(result, "error: ") {
				result = "error: " + result
			}
			if len(result) > 72 {
				result = result[:69] + "..."
			}
			fmt.Fprintf(out, "  - %s %s -> %s\n", tr.Name, tr.Arguments, result)
		}
	}
	text := res.Text
	if text == "" && len(res.Steps) > 0 && len(res.Steps[len(res.Steps)-1].ToolResults) > 0 {
		text = fmt.Sprintf("(no answer: the turn stopped after %d steps)", len(res.Steps))
	}
	fmt.Fprintf(out, "bot> %s\n", text)
}
