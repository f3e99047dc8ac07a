package llm_test

import (
	"context"
	"fmt"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
)

// echo is the smallest Model: it answers with the last message it was sent.
type echo struct{}

func (echo) Generate(_ context.Context, req *llm.Request) (*llm.Reply, error) {
	if len(req.Messages) == 0 {
		return nil, &llm.ModelError{StatusCode: 400, Message: "no messages"}
	}
	last := req.Messages[len(req.Messages)-1]
	return &llm.Reply{
		Message:      defs.Message{Role: defs.RoleAssistant, Content: last.Content},
		FinishReason: llm.FinishStop,
		Usage:        llm.Usage{InputTokens: 3, OutputTokens: 1},
	}, nil
}

func (echo) ModelName() string { return "echo" }

// A provider adapter implements Model (and, when it can, the optional
// interfaces such as ModelNamer) and reports failures as *ModelError.
func ExampleModel() {
	var m llm.Model = echo{}
	reply, err := m.Generate(context.Background(), &llm.Request{
		Messages: []defs.Message{defs.UserMessage("hello")},
	})
	fmt.Println(reply.Message.Content, reply.FinishReason, reply.Usage.Total(), err)
	if n, ok := m.(llm.ModelNamer); ok {
		fmt.Println(n.ModelName())
	}
	_, err = m.Generate(context.Background(), &llm.Request{})
	fmt.Println(err)
	fmt.Println("retryable:", llm.IsRetryable(err))
	// Output:
	// hello stop 4 <nil>
	// echo
	// model error (status 400, retryable=false): no messages
	// retryable: false
}

// A provider's usage priced with the shares its price list gives: here
// Anthropic's (a cache read at 0.1 of the input price, a write at 1.25,
// 2 for an entry that lives an hour), for a model at $3 and $15 per
// million input and output tokens.
func ExamplePricing_Cost() {
	p := llm.Pricing{Input: 3, Output: 15, CacheRead: 0.1, CacheWrite: 1.25, CacheWrite1h: 2}
	u := llm.Usage{InputTokens: 100_000, OutputTokens: 1_000, CachedTokens: 90_000, CacheWriteTokens: 8_000}
	fmt.Printf("%+v\n", u.Split())
	fmt.Printf("$%.4f\n", p.Cost(u))
	// Output:
	// {Uncached:2000 CacheRead:90000 CacheWrite:8000 CacheWrite1h:0}
	// $0.0780
}
