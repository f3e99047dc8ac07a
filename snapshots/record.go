package snapshots

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/reprompt/reprompt/llm"
)

// scriptVersion is the version of the JSON format Recorder writes.
const scriptVersion = 1

// Recorder is an llm.Model that passes every request to another model
// and records the replies it gave (errors included), so that a run against a
// real model can be replayed offline: write the recording with WriteFile,
// load it with Replay, and the scripted model answers as the real one did.
//
// Each reply is recorded with the agent it answered (Request.Agent) and
// whether it was a summary (llm.PurposeSummary), so that the replay
// gives every sub-agent its own script and answers summaries from their own
// list.
//
// A Recorder is safe for concurrent use if the model it wraps is. Replies
// are recorded in the order they arrive; when several instances of one
// sub-agent call the model concurrently that order, and so the replay, is
// only as deterministic as the run.
type Recorder struct {
	model   llm.Model
	mu      sync.Mutex
	replies []recorded
}

// recorded is one reply in the JSON file.
type recorded struct {
	// Agent is the sub-agent the reply answered; "" for the run's prompt.
	Agent string `json:"agent,omitempty"`
	// Summary marks the answer to a summary request.
	Summary bool `json:"summary,omitempty"`
	// Output is how the request asked for a typed answer
	// (llm.OutputSpec.Mode); "" when it asked for none.
	Output    llm.OutputMode   `json:"output,omitempty"`
	Text      string           `json:"text,omitempty"`
	Refusal   string           `json:"refusal,omitempty"`
	Reasoning string           `json:"reasoning,omitempty"`
	Calls     []recordedCall   `json:"calls,omitempty"`
	Finish    llm.FinishReason `json:"finish,omitempty"`
	Usage     *llm.Usage       `json:"usage,omitempty"`
	Error     *recordedError   `json:"error,omitempty"`
}

// recordedCall keeps the arguments as a string: the exact bytes the model
// sent, valid JSON or not.
type recordedCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// recordedError is a failed model call. An *llm.ModelError keeps its
// fields; any other error keeps its text only.
type recordedError struct {
	Message        string `json:"message"`
	ModelError     bool   `json:"model_error,omitempty"`
	StatusCode     int    `json:"status_code,omitempty"`
	Retryable      bool   `json:"retryable,omitempty"`
	ContextTooLong bool   `json:"context_too_long,omitempty"`
}

type scriptFile struct {
	Version int        `json:"version"`
	Replies []recorded `json:"replies"`
}

// Record returns a Recorder that passes requests through to model.
func Record(model llm.Model) *Recorder { return &Recorder{model: model} }

// NativeOutput implements llm.NativeOutputModel as the wrapped model
// does (false when it does not), so that a recorded run asks for a typed
// answer as it would without the Recorder.
func (r *Recorder) NativeOutput() bool {
	m, ok := r.model.(llm.NativeOutputModel)
	return ok && m.NativeOutput()
}

// Redact implements llm.Redactor as the wrapped model does (s unchanged
// when it does not), so that a recorded run's traces and logs hide the
// same secrets as they would without the Recorder.
func (r *Recorder) Redact(s string) string {
	if m, ok := r.model.(llm.Redactor); ok {
		return m.Redact(s)
	}
	return s
}

// Generate passes req to the wrapped model and records its reply or error.
func (r *Recorder) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	reply, err := r.model.Generate(ctx, req)
	r.record(req, reply, err)
	return reply, err
}

// Stream passes req to the wrapped model's Stream if it is a
// llm.StreamingModel, and otherwise to Generate, delivering the reply's
// text and tool calls to onDelta once it arrived. It records the reply or
// error.
func (r *Recorder) Stream(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Reply, error) {
	sm, ok := r.model.(llm.StreamingModel)
	if ok {
		reply, err := sm.Stream(ctx, req, onDelta)
		r.record(req, reply, err)
		return reply, err
	}
	reply, err := r.Generate(ctx, req)
	if err != nil {
		return nil, err
	}
	if m := reply.Message; m.Content != "" || m.Reasoning != "" {
		onDelta(llm.Delta{Content: m.Content, Reasoning: m.Reasoning})
	}
	for i, c := range reply.Message.ToolCalls {
		onDelta(llm.Delta{ToolCall: &llm.ToolCallDelta{Index: i, ID: c.ID, Name: c.Name, Arguments: string(c.Arguments)}})
	}
	return reply, nil
}

func (r *Recorder) record(req *llm.Request, reply *llm.Reply, err error) {
	var rec recorded
	switch {
	case err != nil:
		rec.Error = &recordedError{Message: err.Error()}
		if me, ok := errors.AsType[*llm.ModelError](err); ok {
			rec.Error = &recordedError{
				Message:        me.Message,
				ModelError:     true,
				StatusCode:     me.StatusCode,
				Retryable:      me.Retryable,
				ContextTooLong: me.ContextTooLong,
			}
			if me.Message == "" && me.Err != nil {
				rec.Error.Message = me.Err.Error()
			}
		}
	case reply == nil:
		rec.Error = &recordedError{Message: "model returned no reply and no error"}
	default:
		m := reply.Message
		usage := reply.Usage
		rec = recorded{Text: m.Content, Reasoning: m.Reasoning, Refusal: reply.Refusal, Finish: reply.FinishReason, Usage: &usage}
		for _, c := range m.ToolCalls {
			rec.Calls = append(rec.Calls, recordedCall{ID: c.ID, Name: c.Name, Arguments: string(c.Arguments)})
		}
	}
	rec.Agent, rec.Summary = req.Agent, req.Purpose == llm.PurposeSummary
	if req.Output != nil {
		rec.Output = req.Output.Mode
	}
	r.mu.Lock()
	r.replies = append(r.replies, rec)
	r.mu.Unlock()
}

// Replies returns the recorded replies as a script, in the order they were
// recorded, the answers to summary requests marked Summary;
// Script(r.Replies()...) answers like the wrapped model did when the run had
// no sub-agents. The replies of sub-agents are in the list too, in the
// order they arrived: Model gives each sub-agent its own script instead.
// The caller owns the slice.
func (r *Recorder) Replies() []Reply {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Reply, len(r.replies))
	for i, rec := range r.replies {
		out[i] = rec.reply()
	}
	return out
}

// Model returns a scripted model that answers like the wrapped model did,
// as Replay does with the file WriteFile writes: each sub-agent from its
// own recorded replies, summaries from their own list.
func (r *Recorder) Model() *Model {
	r.mu.Lock()
	defer r.mu.Unlock()
	return scriptOf(r.replies)
}

// WriteFile writes the recorded replies to path as indented JSON, replacing
// the file. The file is meant to be committed next to the test that replays
// it (under testdata/) and read back with Replay. The secrets of the wrapped
// model (see Redact) are redacted from the texts, reasoning, tool call
// arguments and errors it writes, as the runtime redacts them from traces
// and logs: a reply that echoed an API key replays with the placeholder.
func (r *Recorder) WriteFile(path string) error {
	r.mu.Lock()
	f := scriptFile{Version: scriptVersion, Replies: append([]recorded{}, r.replies...)}
	r.mu.Unlock()
	if _, ok := r.model.(llm.Redactor); ok {
		for i, rec := range f.Replies {
			f.Replies[i] = rec.redact(r.Redact)
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f); err != nil {
		return fmt.Errorf("snapshots: encoding the recording: %w", err)
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// Replay reads a recording written by Recorder.WriteFile and returns a
// scripted model that gives the recorded replies in order: the same text,
// reasoning, tool call ids and arguments (byte for byte), finish reasons and
// usage. A recorded *llm.ModelError is returned again as one, with its
// status and flags; any other recorded error as an error with its text.
// When the recording holds replies of sub-agents, each sub-agent is
// answered from its own (see Model.Agent); recorded summaries answer
// summary requests. Recordings made before replies carried their agent
// and purpose replay as one list.
func Replay(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("snapshots: %w", err)
	}
	var f scriptFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		// The offset the decoder stopped at, for a line to look at.
		off := dec.InputOffset()
		if se, ok := errors.AsType[*json.SyntaxError](err); ok {
			off = se.Offset
		} else if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			off = te.Offset
		} else if q, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			// The error has no offset: the field's first use as a key.
			if loc := regexp.MustCompile(regexp.QuoteMeta(q) + `\s*:`).FindIndex(data); loc != nil {
				off = int64(loc[0])
			}
		}
		off = min(max(off, 0), int64(len(data)))
		line := 1 + bytes.Count(data[:off], []byte("\n"))
		return nil, fmt.Errorf("snapshots: %s:%d: %w", path, line, err)
	}
	if f.Version != scriptVersion {
		return nil, fmt.Errorf("snapshots: %s: recording version %d, want %d", path, f.Version, scriptVersion)
	}
	return scriptOf(f.Replies), nil
}

// scriptOf returns a scripted model answering with recs: with agent
// scripts when some reply answered a sub-agent.
func scriptOf(recs []recorded) *Model {
	m := Script()
	for _, rec := range recs {
		if rec.Output == llm.OutputNative {
			m.native = true // the recorded run asked with a response_format
		}
		if rec.Agent == "" {
			m.Append(rec.reply())
		} else {
			m.Agent(rec.Agent, rec.reply())
		}
	}
	return m
}

func (rec recorded) reply() Reply {
	if e := rec.Error; e != nil {
		r := Fail(errors.New(e.Message))
		if e.ModelError {
			r = Fail(&llm.ModelError{StatusCode: e.StatusCode, Retryable: e.Retryable, ContextTooLong: e.ContextTooLong, Message: e.Message})
		}
		r.Summary = rec.Summary
		return r
	}
	r := Reply{Text: rec.Text, Reasoning: rec.Reasoning, Refusal: rec.Refusal, Finish: rec.Finish, Summary: rec.Summary}
	if r.Finish == "" {
		r.Finish = NoFinish // the model reported none: replay none
	}
	if rec.Usage != nil {
		u := *rec.Usage
		r.Usage = &u
	} else {
		r.Usage = &llm.Usage{}
	}
	for _, c := range rec.Calls {
		r.Calls = append(r.Calls, Call{ID: c.ID, Name: c.Name, Args: json.RawMessage(c.Arguments)})
	}
	return r
}

// redact returns rec with red applied to its texts, its calls' arguments
// and its error's message.
func (rec recorded) redact(red func(string) string) recorded {
	rec.Text, rec.Refusal, rec.Reasoning = red(rec.Text), red(rec.Refusal), red(rec.Reasoning)
	if len(rec.Calls) > 0 {
		calls := make([]recordedCall, len(rec.Calls))
		for i, c := range rec.Calls {
			c.Arguments = red(c.Arguments)
			calls[i] = c
		}
		rec.Calls = calls
	}
	if rec.Error != nil {
		e := *rec.Error
		e.Message = red(e.Message)
		rec.Error = &e
	}
	return rec
}
