package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
)

type transferArgs struct {
	To     string `json:"to"`
	Amount int    `json:"amount"`
}

// bank is a prompt with a tool that needs no approval (balance), one that
// needs it above 100 (transfer) and one that always needs it (close),
// counting how often each runs.
type bank struct {
	balanceRuns, transferRuns, closeRuns atomic.Int32
	idempotent                           bool // transfer is declared idempotent
}

func (b *bank) fn(p *prompt.Prompt) error {
	balance, setBalance := prompt.State(p, "balance", 1000)
	p.DefSystem("role", "You run a bank account.")
	prompt.DefTool(p, "balance", "The balance.", func(ctx context.Context, _ struct{}) (int, error) {
		b.balanceRuns.Add(1)
		return balance, nil
	})
	opts := []prompt.ToolOption{prompt.NeedsApprovalIf(func(a transferArgs) bool { return a.Amount > 100 })}
	if b.idempotent {
		opts = append(opts, prompt.Idempotent())
	}
	prompt.DefTool(p, "transfer", "Send money.", func(ctx context.Context, a transferArgs) (string, error) {
		b.transferRuns.Add(1)
		setBalance.Update(ctx, func(v int) int { return v - a.Amount })
		return fmt.Sprintf("sent %d to %s", a.Amount, a.To), nil
	}, opts...)
	prompt.DefTool(p, "close", "Close the account.", func(ctx context.Context, _ struct{}) (string, error) {
		b.closeRuns.Add(1)
		return "closed", nil
	}, prompt.NeedsApproval())
	p.User("Pay the rent and close the account.")
	return nil
}

// bankScript calls four tools in one reply: balance and a small transfer
// run at once, a large transfer and close await a decision.
func bankScript() *snapshots.Model {
	return snapshots.Script(
		snapshots.CallTools(
			snapshots.Call{ID: "c1", Name: "balance"},
			snapshots.Call{ID: "c2", Name: "transfer", Args: transferArgs{To: "landlord", Amount: 500}},
			snapshots.Call{ID: "c3", Name: "transfer", Args: transferArgs{To: "cafe", Amount: 5}},
			snapshots.Call{ID: "c4", Name: "close"},
		),
		snapshots.Text("Rent paid; the account stays open."),
	)
}

func awaitingIDs(as []runtime.PendingApproval) []string {
	var ids []string
	for _, a := range as {
		ids = append(ids, a.CallID)
	}
	return ids
}

func toolMessages(msgs []defs.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Role == defs.RoleTool {
			s := m.ToolCallID + " " + m.Content
			if m.IsError {
				s += " (error)"
			}
			out = append(out, s)
		}
	}
	return out
}

// wantResults are the bank's tool results after approving c2 and denying
// c4 with "not today", in call order.
var wantResults = []string{"c1 1000", "c2 sent 500 to landlord", "c3 sent 5 to cafe", "c4 not today (error)"}

func TestApprovalPausesAndContinuesInProcess(t *testing.T) {
	ctx := context.Background()
	var b bank
	model := bankScript()
	r := runtime.New(model, b.fn, runtime.Config{})
	res, err := r.Run(ctx)
	require.NoError(t, err, "a pause is not an error")

	// The run paused at step 0: the calls that need no approval ran, in
	// call order; the two others wait.
	require.Len(t, res.Steps, 1)
	s := res.Steps[0]
	assert.False(t, s.Done)
	assert.Equal(t, []runtime.PendingApproval{
		{Step: 0, CallID: "c2", Tool: "transfer", Arguments: json.RawMessage(`{"to":"landlord","amount":500}`)},
		{Step: 0, CallID: "c4", Tool: "close", Arguments: json.RawMessage(`{}`)},
	}, s.Awaiting)
	assert.Equal(t, s.Awaiting, res.Awaiting)
	assert.Equal(t, s.Awaiting, r.Awaiting())
	assert.Equal(t, []string{"c1", "c3"}, []string{s.ToolResults[0].CallID, s.ToolResults[1].CallID})
	assert.Equal(t, int32(1), b.transferRuns.Load(), "only the small transfer ran")
	assert.Equal(t, int32(0), b.closeRuns.Load())
	assert.Equal(t, 995, s.State["balance"], "the small transfer's state change is applied")
	assert.Empty(t, toolMessages(res.Transcript), "the paused reply is not in the transcript yet")
	assert.Equal(t, 0, r.StepNumber())

	// Still paused: Next and Run do nothing.
	_, err = r.Next(ctx)
	require.ErrorIs(t, err, runtime.ErrAwaitingApproval)
	assert.Contains(t, err.Error(), "c2, c4")
	res, err = r.Run(ctx)
	require.NoError(t, err)
	assert.Empty(t, res.Steps)
	assert.Equal(t, []string{"c2", "c4"}, awaitingIDs(res.Awaiting))

	// Bad decisions are typed errors naming the call.
	err = r.Approve("c9")
	require.ErrorIs(t, err, runtime.ErrUnknownCall)
	ae, ok := errors.AsType[*runtime.ApprovalError](err)
	require.True(t, ok)
	assert.Equal(t, &runtime.ApprovalError{Op: "approve", CallID: "c9", Awaiting: []string{"c2", "c4"}, Err: runtime.ErrUnknownCall}, ae)
	// The message is the contract here: how an ApprovalError prints.
	assert.Equal(t, `approve "c9": no tool call with this id awaits a decision (awaiting a decision: c2, c4)`, err.Error())
	require.ErrorIs(t, r.Deny("c1", "no"), runtime.ErrUnknownCall, "a call that needed no approval")

	require.NoError(t, r.Approve("c2"))
	err = r.Deny("c2", "changed my mind")
	require.ErrorIs(t, err, runtime.ErrAlreadyDecided)
	assert.Equal(t, `deny "c2": the tool call was already decided (approved) (awaiting a decision: c4)`, err.Error())
	assert.Equal(t, []string{"c4"}, awaitingIDs(r.Awaiting()))
	assert.Equal(t, int32(1), b.transferRuns.Load(), "Approve runs nothing")

	require.NoError(t, r.Deny("c4", "not today"))
	assert.Nil(t, r.Awaiting())
	res, err = r.Run(ctx)
	require.NoError(t, err)

	// The paused step is completed by a record of the same number, then the
	// run goes on.
	require.Len(t, res.Steps, 2)
	c := res.Steps[0]
	assert.Equal(t, 0, c.Number)
	assert.Nil(t, c.Request(), "the completing record sends no request")
	assert.False(t, c.Resumed)
	assert.Equal(t, []runtime.Decision{
		{CallID: "c2", Tool: "transfer", Approved: true},
		{CallID: "c4", Tool: "close", Reason: "not today"},
	}, c.Decisions)
	var results []string
	for _, r := range c.ToolResults {
		s := r.CallID + " " + r.Content
		if r.IsError {
			s += " (error)"
		}
		results = append(results, s)
	}
	assert.Equal(t, wantResults, results)
	assert.True(t, res.Steps[1].Done)
	assert.Equal(t, "Rent paid; the account stays open.", res.Text)
	assert.Nil(t, res.Awaiting)
	assert.Empty(t, cmp.Diff(wantResults, toolMessages(res.Transcript)), "tool results in the transcript, in call order (-want +got)")
	assert.Equal(t, int32(2), b.transferRuns.Load())
	assert.Equal(t, int32(0), b.closeRuns.Load())
	assert.Equal(t, int32(1), b.balanceRuns.Load())
	balance, err := runtime.StateOf[int](res, "balance")
	require.NoError(t, err)
	assert.Equal(t, 495, balance)
	// The model's second request has the reply and its results.
	reqs := model.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, wantResults, toolMessages(reqs[1].Messages))
	_, err = r.Next(ctx)
	require.ErrorIs(t, err, runtime.ErrDone)
	require.ErrorIs(t, r.Approve("c2"), runtime.ErrDone)
}

func TestApprovalAllDecidedBeforeAnyRan(t *testing.T) {
	// Only calls that need approval: nothing runs at the pause.
	var b bank
	model := snapshots.Script(
		snapshots.CallTools(snapshots.Call{ID: "x", Name: "close"}),
		snapshots.Text("ok"),
	)
	r := runtime.New(model, b.fn, runtime.Config{})
	res, err := r.Run(t.Context())
	require.NoError(t, err)
	require.Len(t, res.Steps, 1)
	assert.Empty(t, res.Steps[0].ToolResults)
	require.NoError(t, r.Deny("x", ""))
	res, err = r.Run(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{`x the call of "close" was denied by a person and did not run (error)`}, toolMessages(res.Transcript))
	assert.Equal(t, int32(0), b.closeRuns.Load())
}

func TestApprovalNotAskedForRefusedCalls(t *testing.T) {
	// Invalid arguments and a disabled tool get their error result without
	// asking anyone; a small transfer needs no approval.
	var b bank
	disabled := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "transfer", "Send money.", func(ctx context.Context, a transferArgs) (string, error) {
			b.transferRuns.Add(1)
			return fmt.Sprintf("sent %d to %s", a.Amount, a.To), nil
		}, prompt.NeedsApprovalIf(func(a transferArgs) bool { return a.Amount > 100 }))
		prompt.DefTool(p, "close", "Close the account.", func(ctx context.Context, _ struct{}) (string, error) {
			b.closeRuns.Add(1)
			return "closed", nil
		}, prompt.NeedsApproval()).Disable()
		p.User("go")
		return nil
	}
	model := snapshots.Script(
		snapshots.CallTools(
			snapshots.Call{ID: "bad", Name: "transfer", Args: `{"to":"x","amount":"lots"}`},
			snapshots.Call{ID: "off", Name: "close"},
			snapshots.Call{ID: "small", Name: "transfer", Args: transferArgs{To: "y", Amount: 100}},
		),
		snapshots.Text("ok"),
	)
	res, err := runtime.Run(t.Context(), model, disabled, runtime.Config{})
	require.NoError(t, err)
	assert.Nil(t, res.Awaiting)
	msgs := toolMessages(res.Transcript)
	require.Len(t, msgs, 3)
	assert.Contains(t, msgs[0], "invalid arguments")
	assert.Contains(t, msgs[1], "disabled")
	assert.Equal(t, "small sent 100 to y", msgs[2])
}

func TestApprovalDecisionFailureIsAnErrorResult(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "pay", "Pay.", func(ctx context.Context, a transferArgs) (string, error) {
			assert.Fail(t, "the tool ran")
			return "", nil
		}, prompt.NeedsApprovalIf(func(a transferArgs) bool { panic("no rule for " + a.To) }))
		p.DefSchemaTool("raw", "Raw.", json.RawMessage(`{"type":"object"}`), func(ctx context.Context, args json.RawMessage) (string, error) {
			assert.Fail(t, "the tool ran")
			return "", nil
		}, prompt.NeedsApprovalIf(func(a transferArgs) bool { return true }))
		p.User("go")
		return nil
	}
	model := snapshots.Script(
		snapshots.CallTools(
			snapshots.Call{ID: "p", Name: "pay", Args: transferArgs{To: "bob", Amount: 1}},
			snapshots.Call{ID: "r", Name: "raw", Args: `{"amount":"many"}`},
		),
		snapshots.Text("ok"),
	)
	res, err := runtime.Run(t.Context(), model, fn, runtime.Config{})
	require.NoError(t, err)
	msgs := toolMessages(res.Transcript)
	require.Len(t, msgs, 2)
	assert.Equal(t, `p error: tool "pay" did not run: deciding whether the call needs approval failed: panic: no rule for bob (error)`, msgs[0])
	assert.Contains(t, msgs[1], `r error: tool "raw" did not run: deciding whether the call needs approval failed: arguments do not decode into runtime_test.transferArgs`)
	// The developer gets the panic's site.
	perr := res.Steps[0].ToolErrors["p"]
	var pe *runtime.ToolPanicError
	require.ErrorAs(t, perr, &pe)
	assert.Contains(t, pe.Site, "approval_test.go")
	var de *runtime.ApprovalDecisionError
	require.ErrorAs(t, res.Steps[0].ToolErrors["r"], &de)
}

func TestApprovalTypeMismatchIsAMisuse(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "pay", "Pay.", func(ctx context.Context, a transferArgs) (string, error) { return "", nil },
			prompt.NeedsApprovalIf(func(a struct{ N int }) bool { return true }))
		return nil
	}
	_, err := runtime.Run(t.Context(), snapshots.Script(snapshots.Text("x")), fn, runtime.Config{})
	var te *prompt.ApprovalTypeError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, reflect.TypeFor[transferArgs](), te.Args)
	assert.Equal(t, reflect.TypeFor[struct{ N int }](), te.Option)
	var pe *prompt.Error
	require.ErrorAs(t, err, &pe)
	assert.True(t, strings.HasPrefix(pe.Site, "approval_test.go:"), "Site %q", pe.Site)
}

func TestApprovalInSubAgentFailsTheCall(t *testing.T) {
	var b bank
	parent := func(p *prompt.Prompt) error {
		p.DefAgent("teller", "A teller.", b.fn)
		p.User("go")
		return nil
	}
	model := snapshots.Script(
		snapshots.CallTool("teller", prompt.AgentArgs{Task: "close it"}),
		snapshots.Text("could not"),
	).Agent("teller", snapshots.CallTools(snapshots.Call{ID: "t1", Name: "close"}))
	res, err := runtime.Run(t.Context(), model, parent, runtime.Config{})
	require.NoError(t, err)
	msgs := toolMessages(res.Transcript)
	require.Len(t, msgs, 1)
	assert.Contains(t, msgs[0], `call t1 of tool "close" needs approval, which sub-agent "teller" cannot wait for`)
	assert.Equal(t, int32(0), b.closeRuns.Load())
}

// TestApprovalAcrossRunners pauses, decides and finishes with three
// runners over one store, which keeps checkpoints encoded as a database
// does (session/crashtest does it with processes over an SQLite file).
func TestApprovalAcrossRunners(t *testing.T) {
	ctx := context.Background()
	st := session.NewMemory()
	cfg := runtime.Config{Store: st, SessionID: "bank"}

	// Runner 1 runs until the pause, and stops.
	var b1 bank
	res, err := runtime.New(bankScript(), b1.fn, cfg).Run(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"c2", "c4"}, awaitingIDs(res.Awaiting))
	cp, err := st.Latest(ctx, "bank")
	require.NoError(t, err)
	require.NotNil(t, cp.Pending)
	assert.Equal(t, 2, cp.Version)
	assert.Equal(t, []session.Approval{{CallID: "c2"}, {CallID: "c4"}}, cp.Pending.Approvals)

	// Runner 2 resumes, approves one and stops before continuing.
	var b2 bank
	r, err := runtime.Resume(ctx, bankScript(), b2.fn, cfg)
	require.NoError(t, err)
	assert.Equal(t, res.Awaiting, r.Awaiting())
	_, err = r.Next(ctx)
	require.ErrorIs(t, err, runtime.ErrAwaitingApproval)
	require.NoError(t, r.Approve("c2"))

	// Runner 3 sees the decision kept, denies the other and finishes.
	var b3 bank
	model := snapshots.Script(snapshots.Text("Rent paid; the account stays open."))
	r, err = runtime.Resume(ctx, model, b3.fn, cfg)
	require.NoError(t, err)
	assert.Equal(t, []string{"c4"}, awaitingIDs(r.Awaiting()))
	require.ErrorIs(t, r.Approve("c2"), runtime.ErrAlreadyDecided)
	require.NoError(t, r.Deny("c4", "not today"))
	res, err = r.Run(ctx)
	require.NoError(t, err)
	require.Len(t, res.Steps, 2)
	assert.True(t, res.Steps[0].Resumed)
	assert.Len(t, res.Steps[0].Decisions, 2)
	assert.Equal(t, wantResults, toolMessages(res.Transcript))
	balance, err := runtime.StateOf[int](res, "balance")
	require.NoError(t, err)
	assert.Equal(t, 495, balance)
	// Every tool ran once over the three runners.
	assert.Equal(t, []int32{1, 1, 0}, []int32{b1.balanceRuns.Load(), b1.transferRuns.Load(), b1.closeRuns.Load()})
	assert.Equal(t, []int32{0, 0, 0}, []int32{b2.balanceRuns.Load(), b2.transferRuns.Load(), b2.closeRuns.Load()})
	assert.Equal(t, []int32{0, 1, 0}, []int32{b3.balanceRuns.Load(), b3.transferRuns.Load(), b3.closeRuns.Load()})
	cp, err = st.Latest(ctx, "bank")
	require.NoError(t, err)
	assert.True(t, cp.Done)
	assert.Equal(t, 1, cp.Version, "no approvals left: written as version 1")
}

// TestApprovedCallRunsAtMostOnce stops the run while the approved call
// runs (its context is cancelled, as a crash would cut it): the resumed run
// gives it an "interrupted" result instead of running it again, unless the
// tool is idempotent.
func TestApprovedCallRunsAtMostOnce(t *testing.T) {
	for _, idempotent := range []bool{false, true} {
		t.Run(fmt.Sprint("idempotent=", idempotent), func(t *testing.T) {
			st := session.NewMemory()
			cfg := runtime.Config{Store: st, SessionID: "bank"}
			b := bank{idempotent: idempotent}
			r := runtime.New(bankScript(), b.fn, cfg)
			_, err := r.Run(context.Background())
			require.NoError(t, err)
			require.NoError(t, r.Approve("c2"))
			require.NoError(t, r.Deny("c4", "not today"))
			// The crash: the approved transfer starts, and the run stops
			// before it returns.
			ctx, cancel := context.WithCancel(context.Background())
			r2, err := runtime.Resume(context.Background(), bankScript(), stoppingBank(&b, cancel), cfg)
			require.NoError(t, err)
			_, err = r2.Run(ctx)
			require.ErrorIs(t, err, context.Canceled)
			require.Equal(t, int32(2), b.transferRuns.Load(), "the small transfer, then the approved one")
			cp, err := st.Latest(context.Background(), "bank")
			require.NoError(t, err)
			require.NotNil(t, cp.Pending)
			assert.Equal(t, []session.Approval{{CallID: "c2", Decision: session.Approved, Started: true}, {CallID: "c4", Decision: session.Denied}}, cp.Pending.Approvals)

			r3, err := runtime.Resume(context.Background(), snapshots.Script(snapshots.Text("done")), b.fn, cfg)
			require.NoError(t, err)
			res, err := r3.Run(context.Background())
			require.NoError(t, err)
			msgs := toolMessages(res.Transcript)
			require.Len(t, msgs, 4)
			if idempotent {
				assert.Equal(t, int32(3), b.transferRuns.Load(), "an idempotent approved call runs again")
				assert.Equal(t, "c2 sent 500 to landlord", msgs[1])
				assert.Empty(t, res.Steps[0].Interrupted)
			} else {
				assert.Equal(t, int32(2), b.transferRuns.Load(), "the approved call ran once")
				assert.True(t, strings.HasPrefix(msgs[1], "c2 error: tool call interrupted"), msgs[1])
				assert.Equal(t, []string{"c2"}, res.Steps[0].Interrupted)
			}
			assert.Equal(t, "c4 not today (error)", msgs[3])
		})
	}
}

// stoppingBank is the bank whose transfer cancels the run's context and
// returns only when it is cancelled.
func stoppingBank(b *bank, cancel context.CancelFunc) prompt.Func {
	return func(p *prompt.Prompt) error {
		prompt.DefTool(p, "transfer", "Send money.", func(ctx context.Context, a transferArgs) (string, error) {
			b.transferRuns.Add(1)
			cancel()
			<-ctx.Done()
			return "", ctx.Err()
		}, prompt.NeedsApproval())
		p.User("Pay the rent and close the account.")
		return nil
	}
}

func TestApprovalCheckpointFailureKeepsNoDecision(t *testing.T) {
	var b bank
	fs := &failingStore{Store: session.NewMemory(), fail: func(cp *session.Checkpoint) bool {
		return cp.Pending != nil && len(cp.Pending.Approvals) > 0 && cp.Pending.Approvals[0].Decision != session.Awaiting
	}}
	r := runtime.New(bankScript(), b.fn, runtime.Config{Store: fs, SessionID: "bank"})
	_, err := r.Run(t.Context())
	require.NoError(t, err)
	err = r.Approve("c2")
	var se *runtime.StepError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "checkpoint", se.Op)
	require.ErrorIs(t, err, errCrash)
	assert.Equal(t, []string{"c2", "c4"}, awaitingIDs(r.Awaiting()), "the decision was not recorded")
}

func TestApprovalLogged(t *testing.T) {
	var buf strings.Builder
	var b bank
	r := runtime.New(bankScript(), b.fn, runtime.Config{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	_, err := r.Run(t.Context())
	require.NoError(t, err)
	require.NoError(t, r.Approve("c2"))
	require.NoError(t, r.Deny("c4", "no"))
	_, err = r.Run(t.Context())
	require.NoError(t, err)
	lines := strings.Split(buf.String(), "\n")
	require.GreaterOrEqual(t, len(lines), 3)
	assert.Contains(t, lines[0], "msg=step step=0 ")
	assert.Contains(t, lines[0], `awaiting="[c2 c4]"`)
	assert.Contains(t, lines[1], "msg=step step=0 ")
	assert.Contains(t, lines[1], "approved=[c2] denied=[c4]")
}

// The step grain: Next returns the paused step, refuses to go on until
// every call is decided, then returns the record that completes it.
func TestApprovalWithNext(t *testing.T) {
	var b bank
	r := runtime.New(bankScript(), b.fn, runtime.Config{})
	defer r.Close()
	s, err := r.Next(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{"c2", "c4"}, awaitingIDs(s.Awaiting))
	var steps int
	for range r.All(t.Context()) {
		steps++
	}
	assert.Zero(t, steps, "All yields nothing while paused")
	require.NoError(t, r.Deny("c4", "no"))
	_, err = r.Next(t.Context())
	require.ErrorIs(t, err, runtime.ErrAwaitingApproval)
	require.NoError(t, r.Approve("c2"))
	s, err = r.Next(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 0, s.Number)
	assert.Len(t, s.Decisions, 2)
	assert.False(t, s.Done)
	s, err = r.Next(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, s.Number)
	assert.True(t, s.Done)
}

// A sub-agent declared with NeedsApproval waits for a decision before it
// starts.
func TestApprovalOfASubAgent(t *testing.T) {
	var started atomic.Int32
	sub := func(p *prompt.Prompt) error {
		started.Add(1)
		return nil
	}
	parent := func(p *prompt.Prompt) error {
		p.DefAgent("researcher", "Researches.", sub,
			prompt.NeedsApprovalIf(func(a prompt.AgentArgs) bool { return strings.Contains(a.Task, "expensive") }))
		p.User("go")
		return nil
	}
	model := snapshots.Script(
		snapshots.CallTools(
			snapshots.Call{ID: "cheap", Name: "researcher", Args: prompt.AgentArgs{Task: "a quick look"}},
			snapshots.Call{ID: "dear", Name: "researcher", Args: prompt.AgentArgs{Task: "an expensive survey"}},
		),
		snapshots.Text("found"), // the cheap sub-agent's answer
		snapshots.Text("done"),
	)
	r := runtime.New(model, parent, runtime.Config{})
	defer r.Close()
	res, err := r.Run(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{"dear"}, awaitingIDs(res.Awaiting))
	assert.Equal(t, int32(1), started.Load(), "only the cheap sub-agent started")
	require.NoError(t, r.Deny("dear", "Too expensive."))
	res, err = r.Run(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{"cheap found", "dear Too expensive. (error)"}, toolMessages(res.Transcript))
	assert.Equal(t, int32(1), started.Load())
}
