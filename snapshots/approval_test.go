package snapshots_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

type payArgs struct {
	To     string `json:"to" jsonschema:"who is paid"`
	Amount int    `json:"amount" jsonschema:"in euros"`
}

// payer pays with a tool that needs approval above 100 euros, and has an
// after-reply effect, which runs when the paused step completes.
func payer(p *prompt.Prompt) error {
	paid, setPaid := prompt.State(p, "paid", 0)
	p.DefSystem("role", "You pay the bills.")
	p.Def("paid", fmt.Sprint(paid))
	prompt.DefTool(p, "pay", "Pay someone.", func(ctx context.Context, a payArgs) (string, error) {
		setPaid.Update(ctx, func(v int) int { return v + a.Amount })
		return fmt.Sprintf("paid %d to %s", a.Amount, a.To), nil
	}, prompt.NeedsApprovalIf(func(a payArgs) bool { return a.Amount > 100 }))
	p.Effect(effects.On(paid), func(ctx context.Context, s *effects.Step) error { return nil }, effects.InPhase(effects.AfterReply))
	p.User("Pay the rent (900), the gym (30) and the car (400).")
	return nil
}

func payScript() *snapshots.Model {
	return snapshots.Script(
		snapshots.CallTools(
			snapshots.Call{Name: "pay", Args: payArgs{To: "landlord", Amount: 900}},
			snapshots.Call{Name: "pay", Args: payArgs{To: "gym", Amount: 30}},
			snapshots.Call{Name: "pay", Args: payArgs{To: "dealer", Amount: 400}},
		),
		snapshots.Text("Rent and gym paid; the car payment was refused."),
	)
}

// TestApprovalGolden pauses at step 0 for two calls, approves the rent and
// denies the car: testdata/TestApprovalGolden.txtar.
func TestApprovalGolden(t *testing.T) {
	var asked []string
	res := snapshots.Run(t, payer, payScript(), snapshots.Decide(func(c runtime.PendingApproval) (bool, string) {
		asked = append(asked, c.CallID)
		if c.CallID == "call_3" {
			return false, "Not this month."
		}
		return true, ""
	}))
	assert.Equal(t, "[call_1 call_3]", fmt.Sprint(asked), "Decide asked for %v, want [call_1 call_3]", asked)
	paid, err := runtime.StateOf[int](res, "paid")
	assert.NoError(t, err, "state paid")
	assert.Equal(t, 930, paid, "state paid")
	assertFormatStep(t, res.Steps)
}

// TestApprovalGoldenPaused has no Decide: the snapshot ends with the pause.
func TestApprovalGoldenPaused(t *testing.T) {
	res := snapshots.Run(t, payer, payScript())
	assert.Len(t, res.Awaiting, 2, "Awaiting = %v, want two calls", res.Awaiting)
}
