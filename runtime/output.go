package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
)

// DefaultOutputRetries is how many invalid answers are sent back to the
// model when Config.OutputRetries is zero.
const DefaultOutputRetries = 2

// ErrNoOutput: Output was asked for the typed answer of a run that ended
// without one (no output was declared at its last step, a stop condition
// ended it first, or it failed).
var ErrNoOutput = errors.New("the run ended without a typed answer")

// OutputError is a run that ended without a valid typed answer: the model
// refused, or its answers stayed invalid after Config.OutputRetries were
// sent back to it.
type OutputError struct {
	Step int
	// Output is the name of the output declared.
	Output string
	// Raw is the last answer as the model gave it: its text, or the answer
	// tool's arguments.
	Raw string
	// Refusal is the model's refusal, when it refused ("" otherwise).
	Refusal string
	// Invalid is how many invalid answers the model gave in a row.
	Invalid int
	// Err is the last answer's validation error; nil for a refusal.
	Err error
}

func (e *OutputError) Error() string {
	if e.Refusal != "" {
		return fmt.Sprintf("step %d: output %q: the model refused: %s", e.Step, e.Output, e.Refusal)
	}
	return fmt.Sprintf("step %d: output %q: %d invalid answers, the last one: %v", e.Step, e.Output, e.Invalid, e.Err)
}

func (e *OutputError) Unwrap() error { return e.Err }

// Output decodes the typed answer of a run, a value of the type the prompt
// declared with prompt.DefOutput:
//
//	res, err := runtime.Run(ctx, model, agent, cfg)
//	report, err := runtime.Output[Report](res)
//
// The error wraps ErrNoOutput when the run ended without a valid answer
// (res nil included), and is a JSON error when T is not the declared type.
func Output[T any](res *Result) (T, error) {
	var v T
	if res == nil {
		return v, ErrNoOutput
	}
	for _, s := range slices.Backward(res.Steps) {
		if s != nil && s.Output != nil {
			if err := json.Unmarshal(s.Output, &v); err != nil {
				return v, fmt.Errorf("decoding the answer of step %d into %T: %w", s.Number, v, err)
			}
			return v, nil
		}
	}
	if res.answer != nil { // an answer of an earlier turn, or of the run before Resume
		if err := json.Unmarshal(res.answer, &v); err != nil {
			return v, fmt.Errorf("decoding the run's answer into %T: %w", v, err)
		}
		return v, nil
	}
	return v, ErrNoOutput
}

// outputMode resolves Config.OutputMode for the run's model.
func (r *Runner) outputMode() llm.OutputMode {
	if r.cfg.OutputMode != llm.OutputAuto {
		return r.cfg.OutputMode
	}
	if m, ok := r.model.(llm.NativeOutputModel); ok && m.NativeOutput() {
		return llm.OutputNative
	}
	return llm.OutputTool
}

// outputSpec returns the spec of the output the prompt's last execution
// declared, or nil. It is made again only when the declaration changed.
func (r *Runner) outputSpec() *llm.OutputSpec {
	o := r.c().Output()
	if o == nil {
		return nil
	}
	mode := r.outputMode()
	if s := r.out.spec; s != nil && s.Name == o.Name && s.Description == o.Description && s.Mode == mode &&
		len(s.Schema) == len(o.Schema) && (len(o.Schema) == 0 || &s.Schema[0] == &o.Schema[0]) {
		return s
	}
	r.out.spec = &llm.OutputSpec{Name: o.Name, Description: o.Description, Type: o.Type, Schema: o.Schema, Mode: mode}
	return r.out.spec
}

// outputTokens counts the schema of a native output (a response_format),
// which providers bill as input: as a tool would be counted. An answer
// tool is among the tools already.
func (l *ledger) outputTokens(o *llm.OutputSpec) int {
	if o == nil || o.Mode != llm.OutputNative {
		return 0
	}
	if o != l.out {
		l.out, l.outN = o, l.c.Tool(o.Name, o.Description, o.Schema)
	}
	return l.outN
}

// sameNativeOutput reports whether two requests send the same
// response_format (none included).
func sameNativeOutput(a, b *llm.OutputSpec) bool {
	native := func(o *llm.OutputSpec) *llm.OutputSpec {
		if o == nil || o.Mode != llm.OutputNative {
			return nil
		}
		return o
	}
	a, b = native(a), native(b)
	if a == nil || b == nil {
		return a == b
	}
	return a.Name == b.Name && a.Description == b.Description && string(a.Schema) == string(b.Schema)
}

// outputState is a runner's typed-answer bookkeeping.
type outputState struct {
	spec *llm.OutputSpec
	// tools is the last request's tools with the answer tool appended, and
	// base the tools it was made from.
	tools, base []llm.ToolSpec
	// invalid counts the invalid answers in a row.
	invalid int
}

// renderOutput adds the declared output to req: Request.Output, and in
// tool mode the answer tool. A tool of the same name is an error.
func (r *Runner) renderOutput(req *llm.Request) error {
	spec := r.outputSpec()
	if spec == nil {
		return nil
	}
	req.Output = spec
	if spec.Mode != llm.OutputTool {
		return nil
	}
	if slices.ContainsFunc(req.Tools, func(t llm.ToolSpec) bool { return t.Name == spec.Name }) {
		return fmt.Errorf("output %q has the name of a declared tool: in tool mode (Config.OutputMode) the answer is a tool of that name; rename one of them", spec.Name)
	}
	o := &r.out
	if n := len(o.tools); n == 0 || !sameToolSlice(o.base, req.Tools) || o.tools[n-1].Name != spec.Name ||
		o.tools[n-1].Description != spec.Description || !sameBytes(o.tools[n-1].Parameters, spec.Schema) {
		o.base = req.Tools
		o.tools = append(slices.Clip(req.Tools), llm.ToolSpec{Name: spec.Name, Description: spec.Description, Parameters: spec.Schema})
	}
	req.Tools = o.tools
	return nil
}

// sameToolSlice reports whether a and b are the same slice.
func sameToolSlice(a, b []llm.ToolSpec) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// sameBytes reports whether a and b are the same slice.
func sameBytes(a, b []byte) bool { return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0]) }

// isAnswerCall reports whether a call named name is a call of the answer
// tool the request of the step under way offered.
//
// It only reads: the tool calls of a reply run concurrently.
func (r *Runner) isAnswerCall(name string) bool {
	o := r.c().Output()
	return o != nil && o.Name == name && r.outputMode() == llm.OutputTool
}

// answerResult validates a call of the answer tool; the model gets "answer
// accepted" or the validation error.
func (r *Runner) answerResult(c defs.ToolCall) defs.ToolResult {
	res := defs.ToolResult{CallID: c.ID, Name: c.Name, Arguments: c.Arguments, Content: "answer accepted"}
	o := r.c().Output()
	if err := o.Validate(orEmptyObject(c.Arguments)); err != nil {
		res.IsError = true
		res.Content = fmt.Sprintf("error: the answer does not match the schema of %q: %v. Call %s again with a valid answer.", c.Name, err, c.Name)
	}
	return res
}

func orEmptyObject(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	return raw
}

// settleOutput decides what the reply of rec means for the declared output,
// once its tool calls ran and it joined the transcript: done reports a
// valid answer (kept in rec.Output); feedback, when not nil, is a message
// telling the model what was wrong with its answer, to append to the
// transcript; err is an *OutputError ending the run. Without an output
// declared at this step it does nothing.
func (r *Runner) settleOutput(rec *Step) (done bool, feedback *defs.Message, err error) {
	var spec *llm.OutputSpec
	if rec.sent {
		spec = rec.request.Output
	} else {
		spec = r.outputSpec() // a step completed by Resume
	}
	if spec == nil || rec.Reply == nil {
		return false, nil, nil
	}
	reply := rec.Reply
	o := r.c().Output()
	if o == nil || o.Name != spec.Name {
		return false, nil, nil
	}
	fail := func(raw string, verr error, msg *defs.Message) (bool, *defs.Message, error) {
		r.out.invalid++
		if r.out.invalid > r.outputRetries() {
			return false, nil, &OutputError{Step: rec.Number, Output: spec.Name, Raw: raw, Invalid: r.out.invalid, Err: verr}
		}
		return false, msg, nil
	}
	if reply.Refusal != "" {
		return false, nil, &OutputError{Step: rec.Number, Output: spec.Name, Raw: reply.Message.Content, Refusal: reply.Refusal}
	}
	calls := reply.Message.ToolCalls
	if spec.Mode == llm.OutputTool {
		// The first valid call of the answer tool is the answer; if none is
		// valid, the last invalid one counts (its result told the model).
		bad := -1
		for i, c := range calls {
			if c.Name != spec.Name || i >= len(rec.ToolResults) {
				continue
			}
			if !rec.ToolResults[i].IsError {
				r.out.invalid = 0
				rec.Output = orEmptyObject(c.Arguments)
				r.conv.answer = rec.Output // saved with the step's checkpoint
				return true, nil, nil
			}
			bad = i
		}
		if bad >= 0 {
			c := calls[bad]
			verr := o.Validate(orEmptyObject(c.Arguments))
			if verr == nil { // the call failed for another reason (a checkpoint's interrupted result)
				verr = errors.New(rec.ToolResults[bad].Content)
			}
			return fail(string(c.Arguments), verr, nil)
		}
		if len(calls) > 0 {
			return false, nil, nil // other tools: the work goes on
		}
	} else if len(calls) > 0 {
		return false, nil, nil
	}
	// A reply without tool calls: its text is the answer (in tool mode, if
	// it is a valid one). A Markdown code fence around it, which models
	// not held to a schema like to add, is not part of it.
	text := reply.Message.Content
	answer := unfence(text)
	verr := o.Validate(answer)
	if verr == nil {
		r.out.invalid = 0
		rec.Output = answer
		r.conv.answer = answer // saved with the step's checkpoint
		return true, nil, nil
	}
	msg := defs.UserMessage(fmt.Sprintf("Your answer does not match the JSON Schema of %q: %v. Answer again with only a JSON value that matches the schema.", spec.Name, verr))
	if spec.Mode == llm.OutputTool {
		msg = defs.UserMessage(fmt.Sprintf("Give your final answer by calling the tool %q: its arguments are the answer. Text is not taken as the answer (%v).", spec.Name, verr))
	}
	return fail(text, verr, &msg)
}

// unfence returns text without surrounding white space and a Markdown
// code fence (```json … ``` or ``` … ```) around it, if it has one.
func unfence(text string) json.RawMessage {
	t := strings.TrimSpace(text)
	if rest, ok := strings.CutPrefix(t, "```"); ok && strings.HasSuffix(rest, "```") && len(rest) >= 3 {
		body := strings.TrimSuffix(rest, "```")
		if nl := strings.IndexByte(body, '\n'); nl >= 0 && !strings.ContainsAny(body[:nl], "{[\"") {
			body = body[nl+1:] // the info string: json, JSON, …
		}
		t = strings.TrimSpace(body)
	}
	return json.RawMessage(t)
}

func (r *Runner) outputRetries() int {
	switch n := r.cfg.OutputRetries; {
	case n == 0:
		return DefaultOutputRetries
	case n < 0:
		return 0
	default:
		return n
	}
}
