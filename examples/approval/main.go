// Command approval runs an agent whose payments above 100 euros wait for a
// person's approval: the run pauses with the calls pending, a person
// approves or denies each (a denial's reason is what the model reads), and
// the run continues, in the same process or, with -db, in another one.
//
//	go run ./examples/approval                     # pauses, then approves call_1 and denies call_3 (the defaults)
//	go run ./examples/approval -ask                # asks you for each pending call
//	go run ./examples/approval -db pay.db -stop    # stops at the pause: the session waits in pay.db
//	go run ./examples/approval -db pay.db -approve call_1,call_3 -deny ""   # another process decides and finishes
//
// The model is a deterministic stand-in (its reply depends only on the
// request), so it runs offline and every process gets the replies one
// uninterrupted run would.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/sqlite"
)

type payArgs struct {
	To     string `json:"to" jsonschema:"who is paid"`
	Amount int    `json:"amount" jsonschema:"in euros"`
}

// agent pays bills; payments above 100 euros need approval.
func agent(p *prompt.Prompt) error {
	paid, setPaid := prompt.State(p, "paid", 0)
	p.DefSystem("role", "You pay the bills with the pay tool, all at once, then report.")
	p.Def("paid", fmt.Sprint(paid))
	prompt.DefTool(p, "pay", "Pay someone.", func(ctx context.Context, a payArgs) (string, error) {
		setPaid.Update(ctx, func(v int) int { return v + a.Amount })
		return fmt.Sprintf("paid %d to %s", a.Amount, a.To), nil
	}, prompt.NeedsApprovalIf(func(a payArgs) bool { return a.Amount > 100 }))
	p.User("Pay the rent (900 to the landlord), the gym (30) and the car (400 to the dealer).")
	return nil
}

// model calls pay three times in its first reply, then reports the results.
type model struct{}

func (model) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	var results []string
	for _, m := range req.Messages {
		if m.Role == defs.RoleTool {
			results = append(results, m.Content)
		}
	}
	if results != nil {
		return &llm.Reply{Message: defs.AssistantMessage("Done. " + strings.Join(results, "; "))}, nil
	}
	call := func(id, to string, amount int) defs.ToolCall {
		args, _ := json.Marshal(payArgs{To: to, Amount: amount})
		return defs.ToolCall{ID: id, Name: "pay", Arguments: args}
	}
	return &llm.Reply{Message: defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{
		call("call_1", "landlord", 900), call("call_2", "gym", 30), call("call_3", "dealer", 400),
	}}}, nil
}

type options struct {
	db      string
	stop    bool
	ask     bool
	approve []string
	deny    []string
	reason  string
}

func main() {
	var o options
	var approve, deny string
	flag.StringVar(&o.db, "db", "", "SQLite file holding the session (default: in memory)")
	flag.BoolVar(&o.stop, "stop", false, "stop at the pause instead of deciding (with -db, another run decides)")
	flag.BoolVar(&o.ask, "ask", false, "ask on stdin for each pending call")
	flag.StringVar(&approve, "approve", "call_1", "calls to approve, comma-separated")
	flag.StringVar(&deny, "deny", "call_3", "calls to deny, comma-separated")
	flag.StringVar(&o.reason, "reason", "Not this month.", "the reason a denied call gets")
	flag.Parse()
	o.approve, o.deny = list(approve), list(deny)
	if err := run(context.Background(), os.Stdout, os.Stdin, o); err != nil {
		fmt.Fprintln(os.Stderr, "approval:", err)
		os.Exit(1)
	}
}

func list(s string) []string {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func run(ctx context.Context, w io.Writer, in io.Reader, o options) error {
	var st session.Store = session.NewMemory()
	if o.db != "" {
		s, err := sqlite.Open(o.db)
		if err != nil {
			return err
		}
		defer s.Close()
		st = s
	}
	cfg := runtime.Config{Store: st, SessionID: "bills"}
	if cp, err := st.Latest(ctx, cfg.SessionID); err == nil && cp.Done {
		fmt.Fprintln(w, "the session already finished")
		return nil
	}
	r, err := runtime.Resume(ctx, model{}, agent, cfg)
	switch {
	case errors.Is(err, session.ErrNotFound):
		r = runtime.New(model{}, agent, cfg)
	case err != nil:
		return err
	default:
		fmt.Fprintf(w, "resumed session %q from %s\n", cfg.SessionID, o.db)
	}
	defer r.Close()
	answers := bufio.NewScanner(in)
	for {
		res, err := r.Run(ctx)
		if err != nil {
			return err
		}
		for _, s := range res.Steps {
			when := ""
			if s.Decisions != nil {
				when = " (decided)"
			}
			for _, tr := range s.ToolResults {
				fmt.Fprintf(w, "step %d%s: %s %s -> %s\n", s.Number, when, tr.Name, tr.Arguments, tr.Content)
			}
		}
		if res.Awaiting == nil {
			fmt.Fprintln(w, res.Text)
			return nil
		}
		for _, a := range res.Awaiting {
			fmt.Fprintf(w, "awaiting approval: %s %s %s\n", a.CallID, a.Tool, a.Arguments)
		}
		if o.stop {
			fmt.Fprintln(w, "stopped at the pause; run again with -db to decide")
			return nil
		}
		decided := false
		for _, a := range res.Awaiting {
			var err error
			switch {
			case o.ask:
				fmt.Fprintf(w, "approve %s %s %s? [y/N, or a reason to deny] ", a.CallID, a.Tool, a.Arguments)
				answer := ""
				if answers.Scan() {
					answer = strings.TrimSpace(answers.Text())
				}
				if strings.EqualFold(answer, "y") || strings.EqualFold(answer, "yes") {
					err = r.Approve(a.CallID)
				} else {
					err = r.Deny(a.CallID, answer)
				}
			case slices.Contains(o.approve, a.CallID):
				fmt.Fprintf(w, "approving %s\n", a.CallID)
				err = r.Approve(a.CallID)
			case slices.Contains(o.deny, a.CallID):
				fmt.Fprintf(w, "denying %s: %s\n", a.CallID, o.reason)
				err = r.Deny(a.CallID, o.reason)
			default:
				continue
			}
			if err != nil {
				return err
			}
			decided = true
		}
		if !decided {
			fmt.Fprintln(w, "no decision given (-approve, -deny, -ask): the run stays paused")
			return nil
		}
	}
}
