package temporal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/state"
)

// The test agent keeps an inventory: "stock" adds items (idempotent: it sets
// a key per item), "charge" bills an order (not idempotent: it appends to a
// ledger file when one is set, so that a test can count its runs), and
// "slow" looks something up slowly (idempotent), giving a test the time to
// kill the worker running it.

type stockArgs struct {
	Item string `json:"item"`
	N    int    `json:"n"`
}

type chargeArgs struct {
	Order  string `json:"order"`
	Amount int    `json:"amount"`
}

type slowArgs struct {
	Key string `json:"key"`
}

// tools holds what the tools of one process touch outside the state.
type tools struct {
	ledger string        // file charge appends to; "" for none
	marker string        // file slow writes its pid to when it starts; "" for none
	delay  time.Duration // how long slow's first run takes
	// chargeDelay is how long charge takes before it bills.
	chargeDelay time.Duration
	mu          sync.Mutex
	calls       map[string]int // runs by tool
}

func (t *tools) count(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.calls == nil {
		t.calls = make(map[string]int)
	}
	t.calls[name]++
}

func (t *tools) runs(name string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.calls[name]
}

// items are the items the agent stocks, each counted under a state key of
// its own ("stock_a"...): parallel calls of one reply that change the same
// key do not compose when tools run as activities (see the package
// documentation).
var items = []string{"a", "b", "c", "zeta"}

func (t *tools) agent(p *prompt.Prompt) error {
	stock := map[string]int{}
	setters := map[string]state.Setter[int]{}
	for _, it := range items {
		stock[it], setters[it] = prompt.State(p, "stock_"+it, 0)
	}
	billed, setBilled := prompt.State(p, "billed", 0)
	lookups, setLookups := prompt.State(p, "lookups", []string{})
	p.DefSystem("role", "You keep the inventory.")
	p.DefData("stock", stock) // a map: rendered with sorted keys
	p.Def("billed", fmt.Sprint(billed))
	p.Def("lookups", strings.Join(lookups, ","))
	prompt.DefTool(p, "stock", "Add n items.", func(ctx context.Context, a stockArgs) (string, error) {
		t.count("stock")
		set, ok := setters[a.Item]
		if !ok || a.N <= 0 {
			return "", fmt.Errorf("cannot stock %d of %q", a.N, a.Item)
		}
		set.Update(ctx, func(n int) int { return n + a.N })
		return fmt.Sprintf("%s: %d", a.Item, stock[a.Item]+a.N), nil
	}, prompt.Idempotent())
	prompt.DefTool(p, "charge", "Bill an order.", func(ctx context.Context, a chargeArgs) (string, error) {
		t.count("charge")
		select {
		case <-time.After(t.chargeDelay):
		case <-ctx.Done():
			return "", ctx.Err()
		}
		if t.ledger != "" {
			f, err := os.OpenFile(t.ledger, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(f, "%s %d\n", a.Order, a.Amount)
			if err := f.Close(); err != nil {
				return "", err
			}
		}
		setBilled.Set(ctx, billed+a.Amount)
		return fmt.Sprintf("billed %s", a.Order), nil
	})
	prompt.DefTool(p, "slow", "Look a key up, slowly.", func(ctx context.Context, a slowArgs) (string, error) {
		// Slow the first time only: in this process, or in any process
		// when they share a marker file.
		first := t.runs("slow") == 0
		if t.marker != "" {
			_, err := os.Stat(t.marker)
			first = os.IsNotExist(err)
		}
		t.count("slow")
		d := time.Duration(0)
		if first {
			d = t.delay
		}
		if t.marker != "" && first {
			if err := os.WriteFile(t.marker, fmt.Appendf(nil, "%d", os.Getpid()), 0o644); err != nil {
				return "", err
			}
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return "", ctx.Err()
		}
		setLookups.Update(ctx, func(l []string) []string { return append(append([]string(nil), l...), a.Key) })
		return "found " + a.Key, nil
	}, prompt.Idempotent())
	p.Effect(effects.On(effects.Named("billed", billed)), func(ctx context.Context, s *effects.Step) error {
		return nil
	})
	p.User("Stock up and bill the orders.")
	return nil
}

// stepModel answers a request by its step number, whoever asks and however
// often: a scripted model that works across processes and retries.
type stepModel struct {
	replies []defs.Message
	final   string
}

func (m *stepModel) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	if req.Purpose == llm.PurposeSummary {
		return &llm.Reply{Message: defs.Message{Role: defs.RoleAssistant, Content: "summary"}}, nil
	}
	if req.Step < len(m.replies) {
		return &llm.Reply{Message: m.replies[req.Step], Usage: llm.Usage{InputTokens: 10 + req.Step, OutputTokens: 3}}, nil
	}
	// Past the script: answer the last user message, then stop.
	last := req.Messages[len(req.Messages)-1]
	return &llm.Reply{Message: defs.Message{Role: defs.RoleAssistant, Content: m.final + " / " + last.Content}, Usage: llm.Usage{InputTokens: 10, OutputTokens: 2}}, nil
}

func call(step, i int, name string, args any) defs.ToolCall {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return defs.ToolCall{ID: fmt.Sprintf("c%d_%d", step, i), Name: name, Arguments: b}
}

func calls(step int, cs ...defs.ToolCall) defs.Message {
	for i := range cs {
		cs[i].ID = fmt.Sprintf("c%d_%d", step, i)
	}
	return defs.Message{Role: defs.RoleAssistant, ToolCalls: cs}
}

// inventoryModel is a run of steps steps: parallel calls, a failing call,
// an unknown tool, a non-idempotent charge, and slow lookups where slow
// says (step numbers).
func inventoryModel(steps int, slow ...int) *stepModel {
	m := &stepModel{final: "Done."}
	for s := range steps {
		switch {
		case contains(slow, s):
			m.replies = append(m.replies, calls(s, call(s, 0, "slow", slowArgs{Key: fmt.Sprintf("k%d", s)}), call(s, 1, "charge", chargeArgs{Order: fmt.Sprintf("o%d", s), Amount: s})))
		case s%4 == 0:
			m.replies = append(m.replies, calls(s,
				call(s, 0, "stock", stockArgs{Item: items[s%3], N: s + 1}),
				call(s, 1, "stock", stockArgs{Item: "zeta", N: 1}),
				call(s, 2, "stock", stockArgs{Item: "c", N: 0})))
		case s%4 == 1:
			m.replies = append(m.replies, calls(s, call(s, 0, "charge", chargeArgs{Order: fmt.Sprintf("o%d", s), Amount: s})))
		case s%4 == 2:
			m.replies = append(m.replies, calls(s, call(s, 0, "nope", stockArgs{}), call(s, 1, "stock", stockArgs{Item: "b", N: 2})))
		default:
			m.replies = append(m.replies, calls(s, call(s, 0, "slow", slowArgs{Key: fmt.Sprintf("k%d", s)})))
		}
	}
	return m
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// ledgerLines returns the lines of a ledger file, sorted.
func ledgerLines(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	lines := strings.Fields(strings.ReplaceAll(string(b), " ", "_"))
	sort.Strings(lines)
	return lines
}

var _ = filepath.Join
