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
