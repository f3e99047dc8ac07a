// Command chat is a terminal chat whose conversation survives the process:
// each line read from standard input is a user turn, and the conversation
// is checkpointed in an SQLite file at every step.
//
//	go run ./examples/chat                              # type, Ctrl-D to quit
//	printf 'hello\nremember milk\nwhat do I remember?\n' | go run ./examples/chat -db /tmp/c.db
//	go run ./examples/chat -db /tmp/c.db -session work  # another conversation
//
// On start it resumes the session -session of -db if the file holds it,
// and starts it otherwise. A process killed at any point (kill -9
// included) loses nothing that was saved: started again, it first finishes
// the turn it was killed in, as far as that turn had been saved (the
// user's message is saved before the model is asked anything), then reads
// the next line. A call of remember that was running when the process
// died is not run again (the tool is not idempotent: the model gets an
// "interrupted" result); a call of recall is.
//
// The prompt function keeps the notes in state, offers the remember and
// recall tools, reminds the model of the notes whenever one was added (an
// effect whose dependency is the number of notes), and declares the
// turn's question as a variable (Prompt.Turn).
//
// By default the model is offline: a deterministic stand-in that answers
// from each request (see echoModel), so any input works and a resumed
// process needs no script position. Built with -tags live, the chat runs on
// a real model when OPENAI_API_KEY or OPENAI_BASE_URL is set (see
// examples/internal/models):
//
//	OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen3:4b go run -tags live ./examples/chat
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/sqlite"
)

// maxTurnSteps bounds the steps of one turn. Config.MaxSteps bounds the
// steps of the whole conversation, so the chat sets it to no limit and ends
// a turn whose model still calls tools after this many steps (StopWhen).
const maxTurnSteps = 8

// Variables of the environment the tests set, to watch the tools and to
// stop one in the middle of a call; nobody else needs them.
const (
	// envToolLog names a file to which every run of a tool appends a line
	// "tool call-id argument", synced, before the tool does anything.
	envToolLog = "REPROMPT_CHAT_TOOL_LOG"
	// envHang names a tool whose calls, once logged, wait until the run
	// is cancelled (or the process killed).
	envHang = "REPROMPT_CHAT_HANG"
)

type noteArgs struct {
	Note string `json:"note" jsonschema:"what to remember, in a few words"`
}

type options struct {
	db      string // the SQLite file
	session string // the session id
	tty     bool   // standard input is a terminal: prompt, do not echo
	toolLog string // see envToolLog
	hang    string // see envHang
}

// agent returns the prompt function. It is executed again before every
// step, with the state, the turn and the effects' memory carried over.
func agent(o options) prompt.Func {
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
			func(ctx context.Context, a noteArgs) (string, error) {
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

// ran is called by each tool first: see envToolLog and envHang.
func (o options) ran(ctx context.Context, tool, arg string) error {
	if o.toolLog != "" {
		f, err := os.OpenFile(o.toolLog, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(f, "%s %s %s\n", tool, prompt.CallID(ctx), arg)
		err = errors.Join(err, f.Sync(), f.Close())
		if err != nil {
			return err
		}
	}
	if o.hang == tool {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func main() {
	db := flag.String("db", filepath.Join(os.TempDir(), "reprompt-chat.db"), "SQLite file holding the conversation")
	id := flag.String("session", "chat", "session id: the conversation to continue, or to start")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fi, err := os.Stdin.Stat()
	o := options{
		db: *db, session: *id,
		tty:     err == nil && fi.Mode()&os.ModeCharDevice != 0,
		toolLog: os.Getenv(envToolLog),
		hang:    os.Getenv(envHang),
	}
	if err := run(ctx, o, os.Stdin, os.Stdout); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(os.Stderr, "\nchat: interrupted; run it again to continue the conversation")
			os.Exit(130)
		}
		fmt.Fprintln(os.Stderr, "chat:", err)
		os.Exit(1)
	}
}

// run resumes or starts the session, finishes a turn left unfinished, then
// runs a turn for each line of in until in ends.
func run(ctx context.Context, o options, in io.Reader, out io.Writer) error {
	st, err := sqlite.Open(o.db)
	if err != nil {
		return err
	}
	defer st.Close()
	model, about := pickModel(echoModel{})
	turnSteps, stepTurn := 0, -1
	cfg := runtime.Config{
		Store: st, SessionID: o.session,
		MaxSteps: -1, // a limit of the whole conversation: see maxTurnSteps
		StopWhen: func(last *runtime.Step) bool {
			if last.Turn != stepTurn {
				turnSteps, stepTurn = 0, last.Turn
			}
			turnSteps++
			return turnSteps >= maxTurnSteps
		},
	}
	fn := agent(o)

	var r *runtime.Runner
	cp, err := st.Latest(ctx, o.session)
	switch {
	case errors.Is(err, session.ErrNotFound):
		fmt.Fprintf(out, "chat: new session %q in %s, on the %s\n", o.session, o.db, about)
		r = runtime.New(model, fn, cfg)
	case err != nil:
		return err
	default:
		if r, err = runtime.Resume(ctx, model, fn, cfg); err != nil {
			return err
		}
		n, msg := r.Turn()
		fmt.Fprintf(out, "chat: resumed session %q in %s: %d turns, on the %s\n", o.session, o.db, n+1, about)
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
		if o.tty {
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
			if o.tty {
				fmt.Fprintln(out)
			}
			return nil
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if !o.tty {
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
