package wire

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	sdk "github.com/sashabaranov/go-openai"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
)

// ToolArguments turns the arguments text a model produced into a
// json.RawMessage that is always valid JSON: "{}" when empty, the text
// itself when it is valid JSON, and otherwise the text as a JSON string, so
// that schema validation rejects it and the model is told.
func ToolArguments(s string) json.RawMessage {
	t := strings.TrimSpace(s)
	if t == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	b, _ := json.Marshal(s)
	return b
}

// newCallID makes an id for a tool call the server sent without one.
func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// finishReason maps the SDK's finish reason; an empty one becomes
// tool_calls when the reply has tool calls.
func finishReason(r sdk.FinishReason, hasToolCalls bool) llm.FinishReason {
	switch r {
	case sdk.FinishReasonStop:
		return llm.FinishStop
	case sdk.FinishReasonToolCalls, sdk.FinishReasonFunctionCall:
		return llm.FinishToolCalls
	case sdk.FinishReasonLength:
		return llm.FinishLength
	case sdk.FinishReasonContentFilter:
		return llm.FinishContentFilter
	case "", sdk.FinishReasonNull:
		if hasToolCalls {
			return llm.FinishToolCalls
		}
		return ""
	default:
		return llm.FinishReason(r)
	}
}

// convertUsage maps the SDK's usage, and the cache writes that raw (the
// response or chunk that carries it) reports, which go-openai does not
// decode (see cacheWrites). A count below zero, which a buggy server may
// send, becomes 0 (it would lower the run's usage and cost), and the
// cached, written and reasoning parts never exceed their totals, as
// llm.Usage documents them.
func convertUsage(u sdk.Usage, raw []byte) llm.Usage {
	out := llm.Usage{InputTokens: max(u.PromptTokens, 0), OutputTokens: max(u.CompletionTokens, 0)}
	if u.PromptTokensDetails != nil {
		out.CachedTokens = min(max(u.PromptTokensDetails.CachedTokens, 0), out.InputTokens)
	}
	out.CacheWriteTokens = min(cacheWrites(raw), out.InputTokens-out.CachedTokens)
	if u.CompletionTokensDetails != nil {
		out.ReasoningTokens = min(max(u.CompletionTokensDetails.ReasoningTokens, 0), out.OutputTokens)
	}
	return out
}

// rawCacheUsage holds the cache writes of a usage object, in the shapes
// servers report them: OpenAI's prompt_tokens_details.cache_write_tokens
// (the models that report writes; OpenRouter too), and the
// cache_creation_input_tokens of Anthropic's usage, which proxies that
// serve Claude models through this protocol (LiteLLM) pass on.
type rawCacheUsage struct {
	Usage *struct {
		PromptTokensDetails *struct {
			CacheWriteTokens int `json:"cache_write_tokens"`
		} `json:"prompt_tokens_details"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	} `json:"usage"`
}

var (
	cacheWriteKey    = []byte(`"cache_write_tokens"`)
	cacheCreationKey = []byte(`"cache_creation_input_tokens"`)
)

// cacheWrites returns the input tokens a raw response or chunk reports
// written to the prompt cache (never below zero), or 0 when it reports
// none.
func cacheWrites(raw []byte) int {
	if !bytes.Contains(raw, cacheWriteKey) && !bytes.Contains(raw, cacheCreationKey) {
		return 0
	}
	var r rawCacheUsage
	if json.Unmarshal(raw, &r) != nil || r.Usage == nil {
		return 0
	}
	n := r.Usage.CacheCreationInputTokens
	if d := r.Usage.PromptTokensDetails; d != nil && d.CacheWriteTokens > 0 {
		n = d.CacheWriteTokens
	}
	return max(n, 0)
}

// rawReasoning holds the "reasoning" field some servers (Ollama, recent
// vLLM, OpenRouter) send instead of DeepSeek's "reasoning_content", which
// is the only one go-openai decodes.
type rawReasoning struct {
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Reasoning string `json:"reasoning"`
		} `json:"message"`
		Delta struct {
			Reasoning string `json:"reasoning"`
		} `json:"delta"`
	} `json:"choices"`
}

var reasoningKey = []byte(`"reasoning"`)

// extraReasoning returns the "reasoning" text of choice 0 in a raw response
// or chunk, or "" when there is none.
func extraReasoning(raw []byte) string {
	if !bytes.Contains(raw, reasoningKey) {
		return ""
	}
	var r rawReasoning
	if json.Unmarshal(raw, &r) != nil {
		return ""
	}
	for _, c := range r.Choices {
		if c.Index == 0 {
			return c.Message.Reasoning + c.Delta.Reasoning
		}
	}
	return ""
}

// convertReply maps a non-streamed response to a Reply.
func convertReply(resp *sdk.ChatCompletionResponse, raw []byte) (*llm.Reply, error) {
	var choice *sdk.ChatCompletionChoice
	for i := range resp.Choices {
		if resp.Choices[i].Index == 0 {
			choice = &resp.Choices[i]
			break
		}
	}
	if choice == nil {
		return nil, fmt.Errorf("response %q has no choices", resp.ID)
	}
	if len(choice.Message.MultiContent) > 0 && choice.Message.Content == "" {
		// The content is an array of parts, which go-openai keeps apart.
		if flat, ok := flattenContentParts(raw); ok {
			var again sdk.ChatCompletionResponse
			if json.Unmarshal(flat, &again) == nil {
				return convertReply(&again, flat)
			}
		}
	}
	if choice.FinishReason == finishError {
		return nil, ErrReplyFailed
	}
	msg := defs.Message{
		Role:      defs.RoleAssistant,
		Content:   choice.Message.Content,
		Reasoning: choice.Message.ReasoningContent,
	}
	if msg.Content == "" {
		msg.Content = choice.Message.Refusal
	}
	if msg.Reasoning == "" {
		msg.Reasoning = extraReasoning(raw)
	}
	for _, tc := range choice.Message.ToolCalls {
		if tc.Type != "" && tc.Type != sdk.ToolTypeFunction {
			continue
		}
		id := tc.ID
		if id == "" {
			id = newCallID()
		}
		msg.ToolCalls = append(msg.ToolCalls, defs.ToolCall{ID: id, Name: tc.Function.Name, Arguments: ToolArguments(tc.Function.Arguments)})
	}
	if len(msg.ToolCalls) == 0 && choice.Message.FunctionCall != nil {
		fc := choice.Message.FunctionCall
		msg.ToolCalls = append(msg.ToolCalls, defs.ToolCall{ID: newCallID(), Name: fc.Name, Arguments: ToolArguments(fc.Arguments)})
	}
	return &llm.Reply{
		Message:      msg,
		Usage:        convertUsage(resp.Usage, raw),
		FinishReason: finishReason(choice.FinishReason, len(msg.ToolCalls) > 0),
		ID:           resp.ID,
		Refusal:      choice.Message.Refusal,
	}, nil
}

// contentPart is one part of a message content sent as an array of parts
// instead of a string: {"type":"text","text":…}, or Mistral's reasoning
// models' {"type":"thinking","thinking":[{"type":"text","text":…}]}.
type contentPart struct {
	Type     string        `json:"type"`
	Text     string        `json:"text"`
	Thinking []contentPart `json:"thinking"`
}

// partsText joins the text of parts, and the text of their thinking parts.
func partsText(parts []contentPart) (text, thinking string) {
	var t, r strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text", "":
			t.WriteString(p.Text)
		case "thinking":
			sub, subThinking := partsText(p.Thinking)
			r.WriteString(sub)
			r.WriteString(subThinking)
		}
	}
	return t.String(), r.String()
}

// flattenContentParts rewrites a response or chunk whose choices have a
// message or delta "content" that is an array of parts, which go-openai
// cannot decode in a stream and keeps apart from Content otherwise: the
// content becomes the text of its text parts, and the text of its thinking
// parts becomes "reasoning" (read by extraReasoning). Tool call arguments
// sent as a JSON object or array instead of a string become that JSON's
// text. It reports whether it changed anything.
func flattenContentParts(raw []byte) ([]byte, bool) {
	var doc map[string]json.RawMessage
	if json.Unmarshal(raw, &doc) != nil {
		return raw, false
	}
	var choices []map[string]json.RawMessage
	if json.Unmarshal(doc["choices"], &choices) != nil {
		return raw, false
	}
	changed := false
	for _, ch := range choices {
		for _, key := range []string{"message", "delta"} {
			var m map[string]json.RawMessage
			if json.Unmarshal(ch[key], &m) != nil || m == nil {
				continue
			}
			edited := stringifyArguments(m)
			var parts []contentPart
			if c := bytes.TrimSpace(m["content"]); len(c) > 0 && c[0] == '[' && json.Unmarshal(c, &parts) == nil {
				text, thinking := partsText(parts)
				m["content"], _ = json.Marshal(text)
				if _, ok := m["reasoning"]; !ok && thinking != "" {
					m["reasoning"], _ = json.Marshal(thinking)
				}
				edited = true
			}
			if edited {
				ch[key], _ = json.Marshal(m)
				changed = true
			}
		}
	}
	if !changed {
		return raw, false
	}
	doc["choices"], _ = json.Marshal(choices)
	out, err := json.Marshal(doc)
	if err != nil {
		return raw, false
	}
	return out, true
}

// stringifyArguments turns the tool call arguments of message m that are a
// JSON object or array into strings holding that JSON, and reports
// whether it changed any.
func stringifyArguments(m map[string]json.RawMessage) bool {
	var calls []map[string]json.RawMessage
	if json.Unmarshal(m["tool_calls"], &calls) != nil {
		return false
	}
	changed := false
	for _, c := range calls {
		var fn map[string]json.RawMessage
		if json.Unmarshal(c["function"], &fn) != nil || fn == nil {
			continue
		}
		a := bytes.TrimSpace(fn["arguments"])
		if len(a) == 0 || (a[0] != '{' && a[0] != '[') {
			continue
		}
		fn["arguments"], _ = json.Marshal(string(a))
		c["function"], _ = json.Marshal(fn)
		changed = true
	}
	if changed {
		m["tool_calls"], _ = json.Marshal(calls)
	}
	return changed
}

// ErrReplyFailed is wrapped by the *llm.ModelError returned when a
// server ends a reply with finish_reason "error" (OpenRouter does when the
// upstream provider fails mid-reply) without saying more. The partial reply
// is dropped. Such an error is retryable.
var ErrReplyFailed = errors.New(`openai: the server ended the reply with finish_reason "error"`)

var errorKey = []byte(`"error"`)

// replyError returns the error a successful (2xx) response body or stream
// chunk carries at its top level, or nil: some proxies answer 200 with
// {"error":…}, and OpenRouter sends a chunk with an "error" beside its
// choices when the upstream provider fails mid-stream. An error object in
// OpenAI's shape becomes an *openai.APIError whose status is the one it
// names (0 when none); any other becomes an *openai.RequestError carrying
// the payload, as go-openai reports a failed response.
func replyError(raw []byte, status int) error {
	if !bytes.Contains(raw, errorKey) {
		return nil
	}
	var top struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &top) != nil {
		return nil
	}
	payload := bytes.TrimSpace(top.Error)
	if len(payload) == 0 || string(payload) == "null" || string(payload) == `""` || string(payload) == "{}" {
		return nil
	}
	if payload[0] == '{' {
		var api sdk.APIError
		if json.Unmarshal(payload, &api) == nil && api.Message != "" {
			api.HTTPStatusCode = StatusInBody(raw)
			if api.HTTPStatusCode != 0 {
				api.HTTPStatus = fmt.Sprintf("%d %s", api.HTTPStatusCode, http.StatusText(api.HTTPStatusCode))
			}
			return &api
		}
	}
	return &sdk.RequestError{
		HTTPStatus:     fmt.Sprintf("%d %s", status, http.StatusText(status)),
		HTTPStatusCode: status,
		Err:            errors.New("openai: the server sent an error in a successful response"),
		Body:           bytes.Clone(raw),
	}
}

// finishError is the finish_reason OpenRouter gives a reply that failed.
const finishError sdk.FinishReason = "error"

// undecodable is the error for a 2xx body go-openai could not decode: it
// shows the body, and an empty one (a proxy that lost it) is retryable.
func undecodable(ex *Exchange, err error) error {
	if len(bytes.TrimSpace(ex.raw)) == 0 {
		return fmt.Errorf("openai: the server answered %d %s with an empty body: %w", ex.Status, http.StatusText(ex.Status), io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("openai: the body of the %d reply is not a chat completion (%w): %s", ex.Status, err, BodyText(ex.raw))
}

// maxMessage bounds the body text a ModelError's message shows.
const maxMessage = 1000

// BodyText is the text of an error body as a message shows it: trimmed; a
// JSON string unquoted; an HTML page (a proxy's, a load balancer's)
// reduced to its title, or to its text without tags when it has none;
// and cut at maxMessage bytes on a character boundary.
func BodyText(b []byte) string {
	b = bytes.TrimSpace(b)
	if s, ok := jsonString(b); ok {
		b = []byte(strings.TrimSpace(s))
	}
	if isHTML(b) {
		if t := htmlText(b); t != "" {
			b = []byte(t)
		}
	}
	if len(b) <= maxMessage {
		return string(b)
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return string(b[:cut]) + "…"
}

// jsonString returns the text of b when b is a JSON string.
func jsonString(b []byte) (string, bool) {
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(b, &s) != nil {
		return "", false
	}
	return s, true
}

// isHTML reports whether b looks like an HTML page or fragment: it begins
// with a tag and names one a page has.
func isHTML(b []byte) bool {
	if len(b) == 0 || b[0] != '<' {
		return false
	}
	head := bytes.ToLower(b[:min(len(b), 4096)])
	for _, tag := range []string{"<!doctype html", "<html", "<head", "<title", "<body"} {
		if bytes.Contains(head, []byte(tag)) {
			return true
		}
	}
	return false
}

// htmlText returns the title of an HTML page, or, when it has none, its
// text without tags, scripts and styles; entities decoded and white space
// collapsed.
func htmlText(b []byte) string {
	lower := bytes.ToLower(b)
	if i := bytes.Index(lower, []byte("<title")); i >= 0 {
		if j := bytes.IndexByte(lower[i:], '>'); j >= 0 {
			start := i + j + 1
			if k := bytes.Index(lower[start:], []byte("</title")); k >= 0 {
				if t := collapse(html.UnescapeString(string(b[start : start+k]))); t != "" {
					return t
				}
			}
		}
	}
	var out strings.Builder
	for i := 0; i < len(b); {
		if b[i] != '<' {
			j := bytes.IndexByte(b[i:], '<')
			if j < 0 {
				j = len(b) - i
			}
			out.Write(b[i : i+j])
			i += j
			continue
		}
		// Skip the tag, and the content of a script or style element.
		end := bytes.IndexByte(b[i:], '>')
		if end < 0 {
			break
		}
		tag := lower[i : i+end]
		i += end + 1
		for _, el := range []string{"script", "style"} {
			if bytes.HasPrefix(tag, []byte("<"+el)) {
				if k := bytes.Index(lower[i:], []byte("</"+el)); k >= 0 {
					i += k
				} else {
					i = len(b)
				}
			}
		}
		out.WriteByte(' ')
	}
	return collapse(html.UnescapeString(out.String()))
}

// collapse trims s and turns each run of white space into one space.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// StatusInBody returns the HTTP status an error body names, or 0: a
// numeric "status" or "code", at the top level or inside "error"; a
// "code" or "type" inside "error" that OpenAI answers with a known status
// (StatusOfCode); or an "error", or the whole body, that is a string
// naming a status (StatusInText).
func StatusInBody(b []byte) int {
	if _, ok := jsonString(b); ok {
		return StatusInText(BodyText(b))
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(b, &obj) != nil {
		return 0
	}
	number := func(m map[string]json.RawMessage) int {
		for _, k := range []string{"status", "code"} {
			var n int
			if json.Unmarshal(m[k], &n) == nil && n >= 100 && n <= 599 {
				return n
			}
		}
		return 0
	}
	if n := number(obj); n != 0 {
		return n
	}
	var inner map[string]json.RawMessage
	if json.Unmarshal(obj["error"], &inner) == nil {
		if n := number(inner); n != 0 {
			return n
		}
		var code, typ string
		_ = json.Unmarshal(inner["code"], &code)
		_ = json.Unmarshal(inner["type"], &typ)
		return StatusOfCode(code, typ)
	}
	if text, ok := jsonString(obj["error"]); ok {
		return StatusInText(text)
	}
	return 0
}

// StatusOfCode returns the HTTP status OpenAI answers an error code or
// type with, for an error that names no status (an error event inside a
// stream that began with 200): 429 for a rate limit or an exhausted quota,
// 500 for a server error, 529 for Anthropic's overloaded_error; 0 for any
// other.
func StatusOfCode(code, typ string) int {
	for _, s := range []string{code, typ} {
		switch s {
		case "rate_limit_exceeded", "rate_limit_error", "insufficient_quota":
			return http.StatusTooManyRequests
		case "server_error":
			return http.StatusInternalServerError
		case "overloaded_error":
			return 529
		}
	}
	return 0
}

// StatusInText returns the HTTP status a short error text names, or 0: a
// status text ("Service Unavailable", in any case), or a text that begins
// with a status code ("502 Bad Gateway", "524: A timeout occurred").
func StatusInText(text string) int {
	text = strings.TrimSpace(text)
	if len(text) >= 3 {
		if n, err := strconv.Atoi(text[:3]); err == nil && n >= 100 && n <= 599 &&
			(len(text) == 3 || strings.ContainsRune(" :-", rune(text[3]))) {
			return n
		}
	}
	for code := 100; code <= 599; code++ {
		if st := http.StatusText(code); st != "" && strings.EqualFold(st, text) {
			return code
		}
	}
	return 0
}
