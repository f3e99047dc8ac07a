package prompt

import (
	"context"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/promptrt"
)

// The runtime drives a Prompt through these; they are not part of the API a
// prompt author uses.
func init() {
	promptrt.Execute = func(ctx context.Context, p any, step int, fn any) ([]defs.Message, error) {
		return p.(*Prompt).execute(ctx, step, fn.(Func))
	}
	promptrt.Forget = func(p any, msgs []defs.Message) { p.(*Prompt).forget(msgs) }
	promptrt.MarkMessagesSeen = func(p any, ids []string) { p.(*Prompt).markMessagesSeen(ids) }
	promptrt.MessageID = messageID
	promptrt.SeenMessages = func(p any) []string { return p.(*Prompt).seenMessages() }
	promptrt.Registry = func(p any) *defs.Registry { return p.(*Prompt).reg }
	promptrt.Effects = func(p any) promptrt.Manager { return p.(*Prompt).eff }
	promptrt.Output = func(p any) *defs.Output { return p.(*Prompt).output }
	promptrt.WithAgentRunner = func(ctx context.Context, r any) context.Context {
		return withAgentRunner(ctx, r.(AgentRunner))
	}
	promptrt.WithToolCall = func(ctx context.Context, r any, id string) context.Context {
		return withToolCall(ctx, r.(AgentRunner), id)
	}
}
