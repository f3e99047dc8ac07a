// Package wire is what providers/openai says and hears on the wire: the
// request body, encoded from cached bytes (Encoder); one HTTP exchange
// through go-openai, with what go-openai does not expose (Exchange, Doer);
// and the decoding of replies and streams, including the shapes servers
// other than OpenAI send (Generate, Stream).
//
// Package openai owns the policy around it: the configuration and its
// defaults, retries, the classification of errors into *llm.ModelError,
// and the redaction of the API key.
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	sdk "github.com/sashabaranov/go-openai"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/lanes"
	"github.com/reprompt/reprompt/llm"
)

// Options are the request fields of an openai.Config, with the defaults
// applied and the reasoning mode resolved.
type Options struct {
	Model           string
	Stop            []string
	Seed            *int
	ReasoningEffort string
	// Reasoning sends MaxTokens as max_completion_tokens and drops
	// Temperature and TopP.
	Reasoning         bool
	MaxTokens         int
	Temperature, TopP *float64
	ParallelToolCalls *bool
	ReplayReasoning   bool
	OmitStreamUsage   bool
	// PromptCacheRetention, if not empty, is sent as
	// prompt_cache_retention.
	PromptCacheRetention string
}

// NewEncoder returns an Encoder of requests with opts.
func NewEncoder(opts Options) *Encoder { return &Encoder{opts: opts} }

// Encoded returns how many messages e has encoded so far (the system
// prompt counts as one), for tests of the cache.
func (e *Encoder) Encoded() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.encoded
}

// Body assembles the request body of req from cached encodings; stream
// selects the streamed request, and cacheKey, if not empty, is sent as
// prompt_cache_key. The body is a new slice, never modified afterwards.
func (e *Encoder) Body(req *llm.Request, stream bool, cacheKey string) ([]byte, error) {
	if req == nil {
		return nil, errors.New("nil request")
	}
	head, tail, err := e.skeleton(req.Tools, req.Output, stream)
	if err != nil {
		return nil, err
	}
	sys, msgs, err := e.messages(req)
	if err != nil {
		return nil, err
	}
	if cacheKey == "" {
		return assemble(head, sys, msgs, tail), nil
	}
	// The key changes from request to request (one Model serves many
	// sessions), so it is not in the skeleton: it goes right after the
	// messages, where the tail begins with "]" and goes on with "," or "}".
	return slices.Concat(head, sys, msgs, tail[:1], e.cacheKeyField(cacheKey), tail[1:]), nil
}

// cacheKeyField returns `,"prompt_cache_key":<key>`, encoded once for the
// same key in a row.
func (e *Encoder) cacheKeyField(key string) []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.keyEnc == nil || e.key != key {
		enc, _ := json.Marshal(key) // a string always encodes
		e.key, e.keyEnc = key, slices.Concat([]byte(`,"prompt_cache_key":`), enc)
	}
	return e.keyEnc
}

// The request body is assembled from cached bytes (one copy) instead of
// being encoded whole by go-openai on every call:
//
//	{"model":…,"messages":[ <encoded messages> ],…rest of the request…}
//
// The part before and after the messages (the skeleton: model, sampling
// parameters, tools, stream options) is encoded by go-openai's own types,
// once, and again only when the tools change. Each message is encoded once,
// when it first appears, into a lane: the encoded transcript of one
// conversation, "m0,m1,…" in one buffer, grown by appending. A request whose
// messages extend a lane's (the common case: one more assistant message and
// its tool results) encodes only the new ones and sends the lane's buffer as
// it is. When the transcript was rewritten (trimmed, compacted, a message
// replaced), the lane is rebuilt: messages still present are copied from the
// old buffer, the others encoded.
//
// A cached message is reused only if it is the same message on the wire:
// role, content, name, tool_call_id, reasoning and tool calls compared in
// full (strings shared with the transcript compare as fast as pointers), so
// the cache cannot go stale whatever the caller does with its slices. Bytes
// once handed to a request are never written again: a rebuilt lane gets a
// new buffer.

// MaxLanes bounds the conversations whose encodings an Encoder keeps (an agent
// and its sub-agents share one openai.Model).
const MaxLanes = 4

// An Encoder makes the request bodies of one openai.Model: it holds its
// Options, lanes and skeletons. It is safe for concurrent use.
type Encoder struct {
	opts    Options
	mu      sync.Mutex
	lanes   []*lane
	clock   uint64
	skel    [2]skeleton // [0] for Generate, [1] for Stream
	encoded int         // messages encoded, for Encoded
	key     string      // the last prompt_cache_key sent
	keyEnc  []byte      // its field, never modified once handed out
}

// lane is the encoded transcript of one conversation.
type lane struct {
	msgs    []defs.Message // what was encoded, with tool calls copied
	ends    []int          // ends[i]: end of message i's encoding in buf
	buf     []byte         // encodings separated by commas
	sys     string         // the last system prompt
	sysEnc  []byte         // its encoding and a comma
	lastUse uint64
}

// skeleton is the encoded request around the messages.
type skeleton struct {
	tools      []llm.ToolSpec  // copy of the tools it was built for
	output     *llm.OutputSpec // copy of the native output it was built for, or nil
	built      bool
	head, tail []byte // head ends with `"messages":[`, tail starts with `]`
}

// sameOnWire reports whether cached (a copy made by copyMessage) and m
// encode to the same bytes.
func sameOnWire(cached, m *defs.Message) bool {
	return cached.Role == m.Role && cached.Content == m.Content && cached.Name == m.Name &&
		cached.ToolCallID == m.ToolCallID && cached.Reasoning == m.Reasoning &&
		slices.EqualFunc(cached.ToolCalls, m.ToolCalls, func(x, y defs.ToolCall) bool {
			return x.ID == y.ID && x.Name == y.Name && bytes.Equal(x.Arguments, y.Arguments)
		})
}

// copyMessage keeps the fields of m that reach the wire; the tool calls
// and their arguments are copied, since the caller may reuse those slices.
func copyMessage(m *defs.Message) defs.Message {
	c := defs.Message{Role: m.Role, Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID, Reasoning: m.Reasoning}
	if len(m.ToolCalls) > 0 {
		c.ToolCalls = make([]defs.ToolCall, len(m.ToolCalls))
		for i, tc := range m.ToolCalls {
			c.ToolCalls[i] = defs.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: bytes.Clone(tc.Arguments)}
		}
	}
	return c
}

// wireMessage is a message as sent: go-openai's ChatCompletionMessage
// fields in its order, except that content is kept when empty (the spec
// requires it for user, system and tool messages) and left out only for an
// assistant message with tool calls.
type wireMessage struct {
	Role             string         `json:"role"`
	Content          *string        `json:"content,omitempty"`
	Name             string         `json:"name,omitempty"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []sdk.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string         `json:"tool_call_id,omitempty"`
}

// encodeMessage appends the JSON of msg to dst.
func (e *Encoder) encodeMessage(dst []byte, msg *defs.Message) ([]byte, error) {
	e.encoded++
	om, err := e.Message(*msg)
	if err != nil {
		return dst, err
	}
	w := wireMessage{Role: om.Role, Name: om.Name, ReasoningContent: om.ReasoningContent, ToolCalls: om.ToolCalls, ToolCallID: om.ToolCallID}
	if om.Content != "" || om.Role != sdk.ChatMessageRoleAssistant || len(om.ToolCalls) == 0 {
		w.Content = &om.Content
	}
	b, err := json.Marshal(&w)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// messages returns the encoded system prompt (with the comma that follows
// it when there are messages) and the encoded messages of req, "m0,m1,…"
// without brackets. The returned bytes are never modified afterwards.
func (e *Encoder) messages(req *llm.Request) (sys, msgs []byte, err error) {
	n := len(req.Messages)
	if req.System == "" && n == 0 {
		return nil, nil, nil
	}
	c := e
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clock++
	l, p := c.pick(req.Messages) // p: the longest prefix the lane holds
	l.lastUse = c.clock
	if req.System != "" {
		// The system prompt often changes from step to step (it renders
		// state): it is encoded apart from the messages, and kept while it
		// stays the same.
		if l.sysEnc == nil || l.sys != req.System {
			enc, err := e.encodeMessage(nil, &defs.Message{Role: defs.RoleSystem, Content: req.System})
			if err != nil {
				return nil, nil, fmt.Errorf("system prompt: %w", err)
			}
			l.sys, l.sysEnc = req.System, append(enc, ',')
		}
		sys = l.sysEnc
		if n == 0 {
			sys = sys[: len(sys)-1 : len(sys)-1]
		}
	}
	if n == 0 {
		return sys, nil, nil
	}
	at := func(i int) *defs.Message { return &req.Messages[i] }

	if p == n {
		return sys, l.buf[:l.ends[n-1]:l.ends[n-1]], nil
	}
	if p == len(l.msgs) {
		// Only new messages: append their encodings.
		for i := p; i < n; i++ {
			if i > 0 {
				l.buf = append(l.buf, ',')
			}
			var err error
			if l.buf, err = e.encodeMessage(l.buf, at(i)); err != nil {
				l.truncate(i)
				return nil, nil, fmt.Errorf("message %d: %w", i, err)
			}
			l.msgs = append(l.msgs, copyMessage(at(i)))
			l.ends = append(l.ends, len(l.buf))
		}
		return sys, l.buf[:len(l.buf):len(l.buf)], nil
	}

	// A rewrite: rebuild the lane in a new buffer, copying the encodings
	// of messages it still holds.
	old := *l
	index := map[lanes.Key][]int{}
	for i := p; i < len(old.msgs); i++ {
		k := lanes.KeyOf(&old.msgs[i])
		index[k] = append(index[k], i)
	}
	nl := lane{
		msgs:    make([]defs.Message, 0, n),
		ends:    make([]int, 0, n),
		buf:     make([]byte, 0, max(len(old.buf), 64)),
		sys:     old.sys,
		sysEnc:  old.sysEnc,
		lastUse: c.clock,
	}
	reused := 0
	for i := range n {
		msg := at(i)
		if i > 0 {
			nl.buf = append(nl.buf, ',')
		}
		j := -1
		if i < p {
			j = i
		} else {
			for _, cand := range index[lanes.KeyOf(msg)] {
				if sameOnWire(&old.msgs[cand], msg) {
					j = cand
					reused++
					break
				}
			}
		}
		if j >= 0 {
			nl.buf = append(nl.buf, old.encoding(j)...)
			nl.msgs = append(nl.msgs, old.msgs[j])
		} else {
			var err error
			if nl.buf, err = e.encodeMessage(nl.buf, msg); err != nil {
				return nil, nil, fmt.Errorf("message %d: %w", i, err)
			}
			nl.msgs = append(nl.msgs, copyMessage(msg))
		}
		nl.ends = append(nl.ends, len(nl.buf))
	}
	if lanes.Diverged(len(old.msgs), p, reused) {
		// Another conversation that opens as the lane's does: the lane
		// stays its own.
		l = c.other(l)
	}
	*l = nl
	return sys, l.buf[:len(l.buf):len(l.buf)], nil
}

// truncate drops the messages from i on after a failed append.
func (l *lane) truncate(i int) {
	l.msgs = l.msgs[:i]
	l.ends = l.ends[:i]
	end := 0
	if i > 0 {
		end = l.ends[i-1]
	}
	l.buf = l.buf[:end]
}

// encoding returns message i's bytes without the comma before it.
func (l *lane) encoding(i int) []byte {
	start := 0
	if i > 0 {
		start = l.ends[i-1] + 1
	}
	return l.buf[start:l.ends[i]]
}

// pick returns the lane that holds the longest prefix of msgs, and that
// prefix's length (see lanes.Pick); with no lane holding any of msgs, a
// free or the least recently used lane.
func (c *Encoder) pick(msgs []defs.Message) (*lane, int) {
	if l, p := lanes.Pick(c.lanes, len(msgs), func(l *lane, i int) bool { return sameOnWire(&l.msgs[i], &msgs[i]) }); l != nil {
		return l, p
	}
	if len(msgs) == 0 {
		// No messages (a system prompt alone): the lane used last.
		var last *lane
		for _, l := range c.lanes {
			if last == nil || l.lastUse > last.lastUse {
				last = l
			}
		}
		if last != nil {
			return last, 0
		}
	}
	return c.other(nil), 0
}

// other returns a free lane, or the least recently used one but not (a
// lane whose conversation is left alone), emptied.
func (c *Encoder) other(not *lane) *lane { return lanes.Other(&c.lanes, MaxLanes, not) }

func (l *lane) Len() int        { return len(l.msgs) }
func (l *lane) LastUse() uint64 { return l.lastUse }

// sameTools reports whether a and b are the same tools on the wire.
func sameTools(a, b []llm.ToolSpec) bool {
	return slices.EqualFunc(a, b, func(x, y llm.ToolSpec) bool {
		return x.Name == y.Name && x.Description == y.Description && bytes.Equal(x.Parameters, y.Parameters)
	})
}

// sameOutput reports whether a and b ask for the same response_format.
func sameOutput(a, b *llm.OutputSpec) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Name == b.Name && a.Description == b.Description && a.Mode == b.Mode && bytes.Equal(a.Schema, b.Schema)
}

// skeleton returns the encoded request around the messages for tools.
// With out set to a native output (llm.OutputNative), the skeleton
// carries its response_format.
func (e *Encoder) skeleton(tools []llm.ToolSpec, out *llm.OutputSpec, stream bool) (head, tail []byte, err error) {
	if out != nil && out.Mode != llm.OutputNative {
		out = nil // the answer tool is among the tools
	}
	c := e
	i := 0
	if stream {
		i = 1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := &c.skel[i]
	if s.built && sameTools(s.tools, tools) && sameOutput(s.output, out) {
		return s.head, s.tail, nil
	}
	fields, patch := e.RequestFields(tools, out, stream)
	b, err := json.Marshal(fields)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the request: %w", err)
	}
	if len(patch.fields) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b, &obj); err != nil {
			return nil, nil, fmt.Errorf("encoding the request: %w", err)
		}
		if err := patch.Apply(obj); err != nil {
			return nil, nil, fmt.Errorf("encoding the request: %w", err)
		}
		if b, err = json.Marshal(obj); err != nil {
			return nil, nil, fmt.Errorf("encoding the request: %w", err)
		}
	}
	const hole = `"messages":null`
	at := bytes.Index(b, []byte(hole))
	if at < 0 {
		return nil, nil, fmt.Errorf("encoding the request: no messages field in %s", b)
	}
	head = append(slices.Clip(b[:at+len(hole)-len("null")]), '[')
	tail = append([]byte{']'}, b[at+len(hole):]...)
	copied := make([]llm.ToolSpec, len(tools))
	for j, t := range tools {
		copied[j] = llm.ToolSpec{Name: t.Name, Description: t.Description, Parameters: bytes.Clone(t.Parameters)}
	}
	var outCopy *llm.OutputSpec
	if out != nil {
		c := *out
		c.Schema = bytes.Clone(out.Schema)
		outCopy = &c
	}
	*s = skeleton{tools: copied, output: outCopy, built: true, head: head, tail: tail}
	return head, tail, nil
}

// assemble joins the parts of a request body into one new slice. The
// request is sent from one contiguous buffer (a *bytes.Reader) because
// net/http writes such a body together with the headers, where a reader
// of its own kind costs an extra packet and a 32 KiB copy buffer per
// request.
func assemble(head, sys, msgs, tail []byte) []byte {
	return slices.Concat(head, sys, msgs, tail)
}

// sdkTakesForReasoning reports whether go-openai's own validator treats
// name as a reasoning model and refuses max_tokens and temperature for it.
func sdkTakesForReasoning(name string) bool {
	for _, p := range []string{"o1", "o3", "o4", "gpt-5"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// emptyParameters is sent for a tool without a parameter schema.
var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// requestFields maps the configuration, tools and output to a go-openai
// request without messages, and the body patch that carries what the SDK's
// types cannot. A native output (llm.OutputNative) becomes a strict
// json_schema response_format; another output is among the tools already.
func (e *Encoder) RequestFields(tools []llm.ToolSpec, output *llm.OutputSpec, stream bool) (sdk.ChatCompletionRequest, Patch) {
	c := &e.opts
	out := sdk.ChatCompletionRequest{
		Model:           c.Model,
		Stop:            c.Stop,
		Seed:            c.Seed,
		ReasoningEffort: c.ReasoningEffort,
	}
	var patch Patch

	switch {
	case c.Reasoning:
		out.MaxCompletionTokens = c.MaxTokens
	case sdkTakesForReasoning(c.Model):
		// go-openai would refuse these fields: send them through the patch.
		if c.MaxTokens > 0 {
			patch.set("max_tokens", c.MaxTokens)
		}
		if c.Temperature != nil {
			patch.set("temperature", *c.Temperature)
		}
		if c.TopP != nil {
			patch.set("top_p", *c.TopP)
		}
	default:
		// max_tokens is deprecated by OpenAI for reasoning models only, and
		// it is the field Ollama, vLLM and llama.cpp servers read.
		//lint:ignore SA1019 see above
		out.MaxTokens = c.MaxTokens
		if c.Temperature != nil {
			out.Temperature = float32(*c.Temperature)
			if *c.Temperature == 0 {
				patch.set("temperature", 0)
			}
		}
		if c.TopP != nil {
			out.TopP = float32(*c.TopP)
			if *c.TopP == 0 {
				patch.set("top_p", 0)
			}
		}
	}
	out.Stream = stream
	if stream && !c.OmitStreamUsage {
		out.StreamOptions = &sdk.StreamOptions{IncludeUsage: true}
	}

	for _, t := range tools {
		params := t.Parameters
		if len(bytes.TrimSpace(params)) == 0 || string(bytes.TrimSpace(params)) == "null" {
			params = emptyParameters
		}
		out.Tools = append(out.Tools, sdk.Tool{
			Type: sdk.ToolTypeFunction,
			Function: &sdk.FunctionDefinition{
				Name:        t.Name,
				Description: t.Description,
				Parameters:  params,
			},
		})
	}
	if len(out.Tools) > 0 && c.ParallelToolCalls != nil {
		out.ParallelToolCalls = *c.ParallelToolCalls
	}
	if c.PromptCacheRetention != "" {
		// go-openai has no field for it.
		patch.set("prompt_cache_retention", c.PromptCacheRetention)
	}
	if output != nil && output.Mode == llm.OutputNative {
		out.ResponseFormat = &sdk.ChatCompletionResponseFormat{
			Type: sdk.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &sdk.ChatCompletionResponseFormatJSONSchema{
				Name:        output.Name,
				Description: output.Description,
				Schema:      output.Schema,
				Strict:      true,
			},
		}
	}
	return out, patch
}

func (e *Encoder) Message(msg defs.Message) (sdk.ChatCompletionMessage, error) {
	switch msg.Role {
	case defs.RoleUser:
		return sdk.ChatCompletionMessage{Role: sdk.ChatMessageRoleUser, Content: msg.Content, Name: msg.Name}, nil
	case defs.RoleSystem:
		return sdk.ChatCompletionMessage{Role: sdk.ChatMessageRoleSystem, Content: msg.Content, Name: msg.Name}, nil
	case defs.RoleTool:
		if msg.ToolCallID == "" {
			return sdk.ChatCompletionMessage{}, fmt.Errorf("tool message without tool_call_id")
		}
		return sdk.ChatCompletionMessage{Role: sdk.ChatMessageRoleTool, Content: msg.Content, ToolCallID: msg.ToolCallID}, nil
	case defs.RoleAssistant:
		om := sdk.ChatCompletionMessage{Role: sdk.ChatMessageRoleAssistant, Content: msg.Content}
		if e.opts.ReplayReasoning {
			om.ReasoningContent = msg.Reasoning
		}
		for _, tc := range msg.ToolCalls {
			om.ToolCalls = append(om.ToolCalls, sdk.ToolCall{
				ID:       tc.ID,
				Type:     sdk.ToolTypeFunction,
				Function: sdk.FunctionCall{Name: tc.Name, Arguments: argumentsText(tc.Arguments)},
			})
		}
		return om, nil
	default:
		return sdk.ChatCompletionMessage{}, fmt.Errorf("unsupported role %q", msg.Role)
	}
}

// argumentsText is the wire form of a tool call's arguments: the raw JSON,
// "{}" when empty, and the original text when the arguments were not valid
// JSON and toolArguments stored them as a JSON string.
func argumentsText(args json.RawMessage) string {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		return "{}"
	}
	if args[0] == '"' {
		var s string
		if json.Unmarshal(args, &s) == nil {
			return s
		}
	}
	return string(args)
}

// Patch is what go-openai's request struct cannot express, because its
// fields are tagged omitempty or its validator refuses them: an explicit
// temperature or top_p of 0, max_tokens and temperature for a model
// whose name go-openai takes for a reasoning model (Options.Reasoning
// false), and the fields it does not have (prompt_cache_retention). (Messages whose content is the empty string are
// encoded with it by encodeMessage.)
type Patch struct {
	fields map[string]any
}

func (p *Patch) set(key string, v any) {
	if p.fields == nil {
		p.fields = map[string]any{}
	}
	p.fields[key] = v
}

// Len returns the number of fields p sets.
func (p Patch) Len() int { return len(p.fields) }

// Apply sets p's fields in body, a request decoded as a JSON object.
func (p Patch) Apply(body map[string]json.RawMessage) error {
	for k, v := range p.fields {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		body[k] = b
	}
	return nil
}
