// Package convtest is the conversation that checks durable turns (issue
// 21): a chat of turns with tools, effects and state, on a model that
// answers from the request alone, so that any process can take the
// conversation up where another stopped. session/crashtest runs it in a
// process killed with SIGKILL; Run runs it on a session.Store, from the
// tests of each store (memory, SQLite, PostgreSQL). Only tests import it.
//
// Turn i is started by Message(i). The model answers turn i with 1 + i%2
// steps that each call two tools, "add" (state only) and "charge" (a
// non-idempotent charge, made safe to run again by a Ledger keyed by the
// call id), then with a text that quotes the turn's definitions and the
// results of its calls.
package convtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
)

// Turns is the length of the conversation.
const Turns = 20

const messagePrefix = "turn "

// Message returns the user's message that starts turn i.
func Message(i int) string {
	return fmt.Sprintf("%s%d: add %d and charge %d", messagePrefix, i, 10*i, i+1)
}

// NextTurn returns the turn whose message transcript does not hold yet:
// the number of turn messages in it.
func NextTurn(transcript []defs.Message) int {
	n := 0
	for _, m := range transcript {
		if m.Role == defs.RoleUser && strings.HasPrefix(m.Content, messagePrefix) {
			n++
		}
	}
	return n
}

// ToolSteps returns how many steps of turn i call tools.
func ToolSteps(i int) int { return 1 + i%2 }

// Model answers from the request alone: the turn is that of the last turn
// message, the step within it the number of assistant messages after it.
// Its calls have ids unique in the conversation ("t3-s1-charge"), as the
// ledger takes them for idempotency keys.
type Model struct{}

// Generate implements llm.Model.
func (Model) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	turn, step := -1, 0
	var results []string
	for _, m := range req.Messages {
		switch {
		case m.Role == defs.RoleUser && strings.HasPrefix(m.Content, messagePrefix):
			turn, step, results = turn+1, 0, nil
		case m.Role == defs.RoleAssistant:
			step++
		case m.Role == defs.RoleTool:
			results = append(results, m.Content)
		}
	}
	if turn < 0 {
		return nil, errors.New("convtest: no turn message in the request")
	}
	usage := llm.Usage{InputTokens: 100 + len(req.Messages), OutputTokens: 10}
	if step >= ToolSteps(turn) {
		text := fmt.Sprintf("turn %d answered (turn %s, total %s): %s", turn, def(req.System, "turn"), def(req.System, "total"), strings.Join(results, "; "))
		return &llm.Reply{Message: defs.AssistantMessage(text), Usage: usage}, nil
	}
	id := fmt.Sprintf("t%d-s%d-", turn, step)
	return &llm.Reply{Message: defs.Message{Role: defs.RoleAssistant, Content: fmt.Sprintf("turn %d step %d", turn, step), ToolCalls: []defs.ToolCall{
		{ID: id + "add", Name: "add", Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, 10*turn+step))},
		{ID: id + "charge", Name: "charge", Arguments: json.RawMessage(fmt.Sprintf(`{"amount":%d}`, turn+1+step))},
	}}, Usage: usage}, nil
}

// def returns the value of definition name in a rendered system prompt
// ("<name>value</name>"), or "?".
func def(system, name string) string {
	_, rest, ok := strings.Cut(system, "<"+name+">")
	if !ok {
		return "?"
	}
	v, _, _ := strings.Cut(rest, "</"+name+">")
	return v
}

// Ledger is the outside world of the conversation, in files of a
// directory that outlive the process: a charge is a line of the file
// "charges", appended and synced; every invocation of the tool is a line
// of "attempts". A charge whose call id is in "charges" already is not
// made again: its receipt is returned (the idempotency key pattern of
// prompt.CallID). Its methods are safe for concurrent use.
type Ledger struct {
	// Hook, if set, is called by each invocation of the tool "charge" with
	// the call id and "before" (the invocation logged, the charge not yet
	// made) or "after" (the charge made, its result not yet returned).
	Hook func(id, point string)

	mu  sync.Mutex
	dir string
}

// NewLedger returns the ledger kept in dir.
func NewLedger(dir string) *Ledger { return &Ledger{dir: dir} }

// Charge charges amount under the key id, once.
func (l *Ledger) Charge(id string, amount int) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := appendSync(filepath.Join(l.dir, "attempts"), id+"\n"); err != nil {
		return "", err
	}
	if l.Hook != nil {
		l.Hook(id, "before")
	}
	charges, err := l.lines("charges")
	if err != nil {
		return "", err
	}
	receipt := fmt.Sprintf("charged %d (receipt %s)", amount, id)
	if charges[id] == 0 {
		if err := appendSync(filepath.Join(l.dir, "charges"), id+"\n"); err != nil {
			return "", err
		}
	}
	if l.Hook != nil {
		l.Hook(id, "after")
	}
	return receipt, nil
}

// Charges returns how many times each call id was charged.
func (l *Ledger) Charges() (map[string]int, error) { return l.lines("charges") }

// Attempts returns how many times the tool ran for each call id.
func (l *Ledger) Attempts() (map[string]int, error) { return l.lines("attempts") }

func (l *Ledger) lines(name string) (map[string]int, error) {
	b, err := os.ReadFile(filepath.Join(l.dir, name))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	n := map[string]int{}
	for id := range strings.FieldsSeq(string(b)) {
		n[id]++
	}
	return n, nil
}

func appendSync(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Agent is the conversation's prompt. State: "total" (what "add" added),
// "charged" (what "charge" charged), "changes" (runs of an effect on
// total) and "turns" (the turns an effect on the turn number saw, so an
// effect run again after a resume or at a turn that did not change shows).
// Definitions: the role, the turn's number and message, the total. Both
// tools change state and are declared idempotent: "add" is, and "charge"
// goes through l.
func Agent(l *Ledger) prompt.Func {
	return func(p *prompt.Prompt) error {
		total, setTotal := prompt.State(p, "total", 0)
		_, setCharged := prompt.State(p, "charged", 0)
		_, setChanges := prompt.State(p, "changes", 0)
		_, setTurns := prompt.State(p, "turns", []int{})
		turn := p.Turn()
		p.DefSystem("role", "You add and charge what each turn asks.")
		p.Def("turn", fmt.Sprint(turn.Number))
		p.Def("question", turn.Message)
		p.Def("total", fmt.Sprint(total))
		prompt.DefTool(p, "add", "Add n to the total.", func(ctx context.Context, a struct {
			N int `json:"n"`
		}) (string, error) {
			setTotal.Update(ctx, func(v int) int { return v + a.N })
			return fmt.Sprint("added ", a.N), nil
		}, prompt.Idempotent())
		prompt.DefTool(p, "charge", "Charge an amount.", func(ctx context.Context, a struct {
			Amount int `json:"amount"`
		}) (string, error) {
			receipt, err := l.Charge(prompt.CallID(ctx), a.Amount)
			if err != nil {
				return "", err
			}
			setCharged.Update(ctx, func(v int) int { return v + a.Amount })
			return receipt, nil
		}, prompt.Idempotent())
		p.Effect(effects.On(total), func(ctx context.Context, _ *effects.Step) error {
			setChanges.Update(ctx, func(v int) int { return v + 1 })
			return nil
		})
		p.Effect(effects.On(turn.Number), func(ctx context.Context, _ *effects.Step) error {
			setTurns.Update(ctx, func(v []int) []int { return append(slices.Clone(v), turn.Number) })
			return nil
		})
		return nil
	}
}

// Calls returns the ids of the calls of "charge" the whole conversation
// makes, each once.
func Calls() map[string]int {
	calls := map[string]int{}
	for turn := range Turns {
		for step := range ToolSteps(turn) {
			calls[fmt.Sprintf("t%d-s%d-charge", turn, step)] = 1
		}
	}
	return calls
}

// Outcome is what a conversation ends with, as its latest checkpoint
// holds it, in a form that compares across stores: tool arguments
// compacted, state decoded.
type Outcome struct {
	Transcript []defs.Message
	State      map[string]any
	Step       int
	Done       bool
}

// OutcomeOf reads the outcome of session id in st.
func OutcomeOf(ctx context.Context, st session.Store, id string) (Outcome, error) {
	cp, err := st.Latest(ctx, id)
	if err != nil {
		return Outcome{}, err
	}
	out := Outcome{Step: cp.Step, Done: cp.Done, Transcript: slices.Clone(cp.Transcript)}
	if err := json.Unmarshal(cp.State, &out.State); err != nil {
		return Outcome{}, fmt.Errorf("state of %s: %w", id, err)
	}
	for i, m := range out.Transcript {
		if len(m.ToolCalls) == 0 {
			continue
		}
		m.ToolCalls = slices.Clone(m.ToolCalls)
		for j, c := range m.ToolCalls {
			var b bytes.Buffer
			if err := json.Compact(&b, c.Arguments); err != nil {
				return Outcome{}, fmt.Errorf("arguments of %s: %w", c.ID, err)
			}
			m.ToolCalls[j].Arguments = json.RawMessage(b.String())
		}
		out.Transcript[i] = m
	}
	return out, nil
}

// Converse continues r with the turns from NextTurn of its transcript to
// Turns: first, when r was resumed inside a turn, it finishes that turn.
func Converse(ctx context.Context, r *runtime.Runner) error {
	if _, resumed := r.ResumedAt(); resumed {
		if _, err := r.Run(ctx); err != nil && !errors.Is(err, runtime.ErrDone) {
			return fmt.Errorf("finishing turn %d: %w", NextTurn(r.Transcript())-1, err)
		}
	}
	for i := NextTurn(r.Transcript()); i < Turns; i++ {
		if _, err := r.Continue(ctx, Message(i)); err != nil {
			return fmt.Errorf("turn %d: %w", i, err)
		}
	}
	return nil
}
