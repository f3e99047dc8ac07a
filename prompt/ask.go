package prompt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// Ask asks the user a question from a tool and returns the answer, a value
// of type T. It is the interrupt of the run: the first time a call asks,
// Ask returns an *AskError, which the tool returns (as it is, or wrapped);
// the runtime then pauses the run, as it does for a call that needs
// approval, and lists the question in runtime.Runner.Awaiting with the
// JSON Schema of T. Once the user answers (runtime.Runner.Answer, which
// validates the answer against that schema), the call is run again from
// its start, and this time Ask returns the answer. A call may ask several
// questions, one after the other: each one pauses the run once, and Ask
// returns the answers in the order asked.
//
//	prompt.DefTool(p, "book", "Book a table.", func(ctx context.Context, a bookArgs) (string, error) {
//		seats, err := prompt.Ask[int](ctx, "How many seats?")
//		if err != nil {
//			return "", err // the run pauses here the first time
//		}
//		return book(a.Day, seats)
//	})
//
// A call is run again after each answer, so what it does before it asks
// runs again too: ask first, act after. Its state changes before a
// question are dropped. The pause is durable as an approval is: with a
// store, the question and the answers are in the checkpoint, and a run
// resumed in another process asks and answers the same way.
//
// Ask takes the tool call's context; called with another one (outside a
// tool call) it returns ErrNoToolCall. A sub-agent's tool asks through its
// parent: the parent's call that runs the sub-agent pauses with the
// question, and once it is answered the sub-agent runs again from its
// start, its questions answered in order.
func Ask[T any](ctx context.Context, question string) (T, error) {
	var zero T
	c, _ := ctx.Value(callIDKey{}).(*callCtx)
	if c == nil {
		return zero, ErrNoToolCall
	}
	s := askSchemaFor(reflect.TypeFor[T]())
	if s.err != nil {
		return zero, s.err
	}
	i := int(c.asked.Add(1)) - 1
	if i < len(c.answers) {
		var v T
		if err := json.Unmarshal(c.answers[i], &v); err != nil {
			return zero, fmt.Errorf("the answer to %q does not decode into %T: %w", question, v, err)
		}
		return v, nil
	}
	return zero, &AskError{Question: Question{Text: question, Schema: s.raw}, Index: i}
}

// ErrNoToolCall is returned by Ask called with a context that is not a
// tool call's.
var ErrNoToolCall = errors.New("prompt.Ask called outside a tool call: pass the context the tool was given")

// Question is a question a tool asked the user (Ask): its text and the
// JSON Schema of the answer's type.
type Question struct {
	Text   string
	Schema json.RawMessage
}

// Validate reports whether answer is a JSON value the question takes: valid
// JSON that matches its schema.
func (q Question) Validate(answer json.RawMessage) error {
	if !json.Valid(answer) {
		return fmt.Errorf("the answer to %q is not valid JSON", q.Text)
	}
	resolved, err := resolveAnswerSchema(q.Schema)
	if err != nil {
		return fmt.Errorf("the question %q: %w", q.Text, err)
	}
	var inst any
	if err := json.Unmarshal(answer, &inst); err != nil {
		return fmt.Errorf("the answer to %q: %w", q.Text, err)
	}
	if err := resolved.Validate(inst); err != nil {
		return fmt.Errorf("the answer to %q does not match its schema: %w", q.Text, err)
	}
	return nil
}

// AskError is what Ask returns when the call's question has no answer yet:
// the tool returns it, and the runtime pauses the run for the answer.
// Index counts the call's questions from 0.
type AskError struct {
	Question Question
	Index    int
}

func (e *AskError) Error() string {
	return fmt.Sprintf("the tool asks the user %q (return this error to pause the run for the answer)", e.Question.Text)
}

// askSchema is the schema of an answer's type, made once per type.
type askSchema struct {
	raw json.RawMessage
	err error
}

var askSchemas sync.Map // reflect.Type → *askSchema

func askSchemaFor(t reflect.Type) *askSchema {
	if v, ok := askSchemas.Load(t); ok {
		return v.(*askSchema)
	}
	s := &askSchema{}
	opts, err := schemaOptions(t)
	var sch *jsonschema.Schema
	if err == nil {
		sch, err = jsonschema.ForType(t, opts)
	}
	if err == nil {
		s.raw, err = json.Marshal(sch)
	}
	if err != nil {
		s.err = fmt.Errorf("prompt.Ask: no JSON Schema for the answer's type %s: %w", t, err)
	}
	v, _ := askSchemas.LoadOrStore(t, s)
	return v.(*askSchema)
}

var answerSchemas sync.Map // string(schema) → *jsonschema.Resolved

// resolveAnswerSchema resolves an answer's schema, cached by its bytes.
func resolveAnswerSchema(raw json.RawMessage) (*jsonschema.Resolved, error) {
	if v, ok := answerSchemas.Load(string(raw)); ok {
		return v.(*jsonschema.Resolved), nil
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("its schema is not valid: %w", err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("its schema cannot be used: %w", err)
	}
	answerSchemas.Store(string(raw), r)
	return r, nil
}
