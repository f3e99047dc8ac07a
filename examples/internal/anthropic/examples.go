package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/reprompt/reprompt/examples/internal/agents"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session/sqlite"
)

// quickstart runs the quickstart's to-do agent, as examples/quickstart
// does (without its -trace and -log).
func quickstart(ctx context.Context, args []string, sio stdio, pick picker) error {
	fs := newFlags("quickstart", sio)
	if err := parse(fs, args); err != nil {
		return err
	}
	model, about := pick("quickstart", agents.TodoScript(), "scripted model")
	return agents.RunTodo(ctx, sio.out, model, about, runtime.Config{MaxSteps: 20, Name: "quickstart"})
}

// structured runs the triage of examples/structured, with its flags
// -native and -tool.
func structured(ctx context.Context, args []string, sio stdio, pick picker) error {
	fs := newFlags("structured", sio)
	native := fs.Bool("native", false, "ask for the answer natively (output_config.format on Anthropic)")
	tool := fs.Bool("tool", false, "ask for the answer with an answer tool")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg := runtime.Config{Name: "triage"}
	switch {
	case *native:
		cfg.OutputMode = llm.OutputNative
	case *tool:
		cfg.OutputMode = llm.OutputTool
	}
	model, about := pick("structured", agents.TriageScript(), "scripted model")
	return agents.RunTriage(ctx, sio.out, model, about, cfg)
}

// chat runs the chat of examples/chat, with its flags -db and -session: a
// turn a line of sio.in, the conversation kept in an SQLite file.
func chat(ctx context.Context, args []string, sio stdio, pick picker) error {
	fs := newFlags("chat", sio)
	db := fs.String("db", filepath.Join(os.TempDir(), "reprompt-chat.db"), "SQLite file holding the conversation")
	id := fs.String("session", "chat", "session id: the conversation to continue, or to start")
	if err := parse(fs, args); err != nil {
		return err
	}
	st, err := sqlite.Open(*db)
	if err != nil {
		return err
	}
	defer st.Close()
	model, about := pick("chat", agents.EchoModel{}, "echo model")
	o := agents.ChatOptions{DB: *db, Session: *id, TTY: isTerminal(sio.in)}
	return agents.RunChat(ctx, st, model, about, o, sio.in, sio.out)
}

func newFlags(name string, sio stdio) *flag.FlagSet {
	fs := flag.NewFlagSet("anthropic "+name, flag.ContinueOnError)
	fs.SetOutput(sio.err)
	return fs
}

// parse parses args into fs, which takes no positional argument; it
// returns errUsage when they do not fit.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		fs.Usage()
		return errUsage
	}
	return nil
}

// isTerminal reports whether r is a terminal: the chat then prompts, and
// does not echo the lines it reads.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
