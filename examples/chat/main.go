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
// The prompt function, the offline model and the loop are in
// examples/internal/agents (Chat, EchoModel, RunChat);
// examples/internal/anthropic, a module of its own, runs them on
// Anthropic's API when ANTHROPIC_API_KEY is set.
//
// By default the model is offline: a deterministic stand-in that answers
// from each request (see agents.EchoModel), so any input works and a
// resumed process needs no script position. Built with -tags live, the chat
// runs on a real model when OPENAI_API_KEY or OPENAI_BASE_URL is set (see
// examples/internal/models):
//
//	OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen3:4b go run -tags live ./examples/chat
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/reprompt/reprompt/examples/internal/agents"
	"github.com/reprompt/reprompt/session/sqlite"
)

// Variables of the environment the tests set, to watch the tools and to
// stop one in the middle of a call; nobody else needs them.
const (
	// envToolLog names a file to which every run of a tool appends a line
	// "tool call-id argument", synced, before the tool does anything
	// (agents.ChatOptions.ToolLog).
	envToolLog = "REPROMPT_CHAT_TOOL_LOG"
	// envHang names a tool whose calls, once logged, wait until the run
	// is cancelled (or the process killed) (agents.ChatOptions.Hang).
	envHang = "REPROMPT_CHAT_HANG"
)

func main() {
	db := flag.String("db", filepath.Join(os.TempDir(), "reprompt-chat.db"), "SQLite file holding the conversation")
	id := flag.String("session", "chat", "session id: the conversation to continue, or to start")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fi, err := os.Stdin.Stat()
	o := agents.ChatOptions{
		DB: *db, Session: *id,
		TTY:     err == nil && fi.Mode()&os.ModeCharDevice != 0,
		ToolLog: os.Getenv(envToolLog),
		Hang:    os.Getenv(envHang),
	}
	if err := run(ctx, o); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(os.Stderr, "\nchat: interrupted; run it again to continue the conversation")
			os.Exit(130)
		}
		fmt.Fprintln(os.Stderr, "chat:", err)
		os.Exit(1)
	}
}

// run opens the SQLite file and runs the chat on standard input and output.
func run(ctx context.Context, o agents.ChatOptions) error {
	st, err := sqlite.Open(o.DB)
	if err != nil {
		return err
	}
	defer st.Close()
	model, about := pickModel(agents.EchoModel{})
	return agents.RunChat(ctx, st, model, about, o, os.Stdin, os.Stdout)
}
