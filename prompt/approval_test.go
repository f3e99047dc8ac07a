package prompt_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/prompt"
)

type amountArgs struct {
	Amount int `json:"amount"`
}

func TestNeedsApproval(t *testing.T) {
	noop := func(ctx context.Context, a amountArgs) (string, error) { return "", nil }
	for _, tc := range []struct {
		name string
		opts []prompt.ToolOption
		want map[string]bool // arguments → needs approval; nil: no decision function
	}{
		{"none", nil, nil},
		{"always", []prompt.ToolOption{prompt.NeedsApproval()}, map[string]bool{`{"amount":1}`: true, ``: true}},
		{"typed", []prompt.ToolOption{prompt.NeedsApprovalIf(func(a amountArgs) bool { return a.Amount > 100 })},
			map[string]bool{`{"amount":1}`: false, `{"amount":101}`: true, ``: false}},
		{"raw", []prompt.ToolOption{prompt.NeedsApprovalIf(func(a json.RawMessage) bool { return string(a) == "{}" })},
			map[string]bool{`{"amount":1}`: false, ``: true}},
		{"the last option wins", []prompt.ToolOption{prompt.NeedsApproval(), prompt.NeedsApprovalIf(func(a amountArgs) bool { return false })},
			map[string]bool{`{"amount":1}`: false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool := declare(t, func(p *prompt.Prompt) error {
				prompt.DefTool(p, "pay", "Pay.", noop, tc.opts...)
				return nil
			}, "pay")
			if tc.want == nil {
				assert.Nil(t, tool.NeedsApproval)
				return
			}
			require.NotNil(t, tool.NeedsApproval)
			for args, want := range tc.want {
				got, err := tool.NeedsApproval(json.RawMessage(args))
				require.NoError(t, err)
				assert.Equal(t, want, got, "arguments %s", args)
			}
		})
	}
}

func TestNeedsApprovalIfSchemaTool(t *testing.T) {
	tool := declare(t, func(p *prompt.Prompt) error {
		p.DefSchemaTool("pay", "Pay.", json.RawMessage(`{"type":"object"}`), func(ctx context.Context, args json.RawMessage) (string, error) {
			return "", nil
		}, prompt.NeedsApprovalIf(func(a map[string]any) bool { return a["amount"] != nil }))
		return nil
	}, "pay")
	need, err := tool.NeedsApproval(json.RawMessage(`{"amount":5}`))
	require.NoError(t, err)
	assert.True(t, need)
	_, err = tool.NeedsApproval(json.RawMessage(`[1]`))
	var ue *json.UnmarshalTypeError
	require.ErrorAs(t, err, &ue, "the arguments do not decode into the map")
}

func TestNeedsApprovalIfOfAnotherType(t *testing.T) {
	p := prompt.New("")
	_, err := p.Execute(0, func(p *prompt.Prompt) error {
		prompt.DefTool(p, "pay", "Pay.", func(ctx context.Context, a amountArgs) (string, error) { return "", nil },
			prompt.NeedsApprovalIf(func(a int) bool { return true }))
		return nil
	})
	var te *prompt.ApprovalTypeError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, reflect.TypeFor[amountArgs](), te.Args)
	assert.Equal(t, reflect.TypeFor[int](), te.Option)
	var pe *prompt.Error
	require.ErrorAs(t, err, &pe)
	assert.True(t, strings.HasPrefix(pe.Site, "approval_test.go:"), "Site %q", pe.Site)
}
