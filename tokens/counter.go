package tokens

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/reprompt/reprompt/defs"
	"github.com/tiktoken-go/tokenizer"
)

// Framing costs, in tokens, added by every Counter of this package (see the
// package documentation for the rules).
const (
	// MessageOverhead is the framing of one message (start, role separator,
	// end).
	MessageOverhead = 3
	// NameOverhead is added, with the name's own tokens, to a message that
	// has a Name.
	NameOverhead = 1
	// ToolCallOverhead is the framing of one tool call in an assistant
	// message.
	ToolCallOverhead = 3
	// ToolOverhead is the framing of one tool schema.
	ToolOverhead = 7
	// ToolsOverhead is the framing of a non-empty tool list, once per
	// request.
	ToolsOverhead = 12
	// ReplyPriming is the framing that primes the model's reply, once per
	// request.
	ReplyPriming = 3
)

// Counter counts tokens under one tokenizer. Implementations must be safe
// for concurrent use; those of this package are.
type Counter interface {
	// Text returns the token count of s, without framing. Text("") is 0.
	Text(s string) int
	// Message returns the token count of m as sent in a request, framing
	// included: MessageOverhead, the role, the content, the ToolCallID, the
	// name plus NameOverhead when the name is set, and for each tool call
	// ToolCallOverhead plus its ID, name and arguments. Reasoning and Meta
	// are not counted: they are never sent back to a model.
	Message(m defs.Message) int
	// Tool returns the token count of a tool schema as sent: ToolOverhead
	// plus the name, the description and the parameters as compact JSON
	// (as given when they are not valid JSON).
	Tool(name, description string, parameters json.RawMessage) int
	// Exact reports whether counts come from the model's own tokenizer. An
	// estimating Counter returns false.
	Exact() bool
	// Name returns the encoding's name ("o200k_base", "cl100k_base"), or
	// "estimate" for an Estimator.
	Name() string
}

// MessageCount returns m's count with text counting its parts, by the
// framing rules of Counter.Message. It is the Message method of this package's Counters,
// exported for Counter implementations that only supply their own Text.
func MessageCount(text func(string) int, m defs.Message) int {
	n := MessageOverhead + text(string(m.Role)) + text(m.Content) + text(m.ToolCallID)
	if m.Name != "" {
		n += NameOverhead + text(m.Name)
	}
	for _, tc := range m.ToolCalls {
		n += ToolCallOverhead + text(tc.ID) + text(tc.Name) + text(string(tc.Arguments))
	}
	return n
}

// ToolCount returns a tool schema's count with text counting its parts, by
// the framing rules of Counter.Tool. Like MessageCount it serves Counter
// implementations that only supply their own Text.
func ToolCount(text func(string) int, name, description string, parameters json.RawMessage) int {
	var buf bytes.Buffer
	p := parameters
	if json.Compact(&buf, parameters) == nil {
		p = buf.Bytes()
	}
	return ToolOverhead + text(name) + text(description) + text(string(p))
}

// encoding is a tokenizer codec loaded once, on first use.
type encoding struct {
	name  tokenizer.Encoding
	once  sync.Once
	codec tokenizer.Codec
}

func (e *encoding) get() tokenizer.Codec {
	e.once.Do(func() {
		c, err := tokenizer.Get(e.name)
		if err != nil {
			panic("tokens: loading " + string(e.name) + ": " + err.Error())
		}
		e.codec = c
	})
	return e.codec
}

// The encodings every Counter shares. A codec is safe for concurrent use as
// long as its error mode is not changed, which this package never does.
var (
	o200k  = &encoding{name: tokenizer.O200kBase}
	cl100k = &encoding{name: tokenizer.Cl100kBase}
)

// bpe is an exact Counter over a tiktoken encoding.
type bpe struct{ enc *encoding }

func (b bpe) Text(s string) int {
	if s == "" {
		return 0
	}
	n, err := b.enc.get().Count(s)
	if err != nil || n == 0 {
		// The tokenizer skips some control characters ("\x7f"): never
		// count a non-empty text as free.
		return Estimator{}.Text(s)
	}
	return n
}

func (b bpe) Message(m defs.Message) int { return MessageCount(b.Text, m) }

func (b bpe) Tool(name, description string, parameters json.RawMessage) int {
	return ToolCount(b.Text, name, description, parameters)
}

func (bpe) Exact() bool      { return true }
func (b bpe) Name() string   { return string(b.enc.name) }
func (b bpe) String() string { return string(b.enc.name) }

// O200k returns the exact Counter of the o200k_base encoding.
func O200k() Counter { return bpe{o200k} }

// Cl100k returns the exact Counter of the cl100k_base encoding.
func Cl100k() Counter { return bpe{cl100k} }

// ForModel returns the Counter for model: exact for the OpenAI families
// whose encoding is known, an Estimator otherwise. The name is matched case
// insensitively after dropping a provider prefix ("openai/gpt-4o") and a
// fine-tune prefix ("ft:gpt-4o-mini:org::id"):
//
//   - o200k_base: gpt-4o, chatgpt-4o, gpt-4.1, gpt-4.5, gpt-5, gpt-oss, o1,
//     o3, o4 and their variants ("gpt-4o-mini", "o3-2025-04-16", "gpt-5.1");
//   - cl100k_base: gpt-4 ("gpt-4", "gpt-4-turbo", "gpt-4-0613"),
//     gpt-3.5-turbo (and Azure's gpt-35-turbo), text-embedding-3-*,
//     text-embedding-ada-002;
//   - an Estimator{} for any other model.
//
// The encodings load on the first count, not here.
func ForModel(model string) Counter {
	switch encodingFor(model) {
	case tokenizer.O200kBase:
		return O200k()
	case tokenizer.Cl100kBase:
		return Cl100k()
	}
	return Estimator{}
}

var (
	o200kFamilies  = []string{"gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "gpt-oss", "o1", "o3", "o4"}
	cl100kFamilies = []string{"gpt-4", "gpt-3.5-turbo", "gpt-35-turbo", "gpt-3.5", "text-embedding-3", "text-embedding-ada-002"}
)

func encodingFor(model string) tokenizer.Encoding {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	m = strings.TrimPrefix(m, "ft:")
	for _, f := range o200kFamilies {
		if family(m, f) {
			return tokenizer.O200kBase
		}
	}
	for _, f := range cl100kFamilies {
		if family(m, f) {
			return tokenizer.Cl100kBase
		}
	}
	return ""
}

// family reports whether model is f or a variant of f: f followed by a
// separator.
func family(model, f string) bool {
	if !strings.HasPrefix(model, f) {
		return false
	}
	if len(model) == len(f) {
		return true
	}
	switch model[len(f)] {
	case '-', '.', ':', '@', '_':
		return true
	}
	return false
}

// Estimator is a Counter for models whose tokenizer is unknown. It counts
// the ASCII bytes of a text at CharsPerToken a token, rounded up, and each
// non-ASCII character as half its UTF-8 length, rounded up (one token for
// an accented letter, two for a CJK character or an emoji). For prose this
// overestimates the counts of common tokenizers; code, digits and long
// identifiers can run about ten percent over it, which a Hybrid corrects.
// Framing follows the same rules as the exact Counters.
//
// The zero value uses four characters a token.
type Estimator struct {
	// CharsPerToken is the number of ASCII characters per token; zero or
	// less means 4.
	CharsPerToken float64
}

// Text returns the estimated token count of s.
func (e Estimator) Text(s string) int {
	if s == "" {
		return 0
	}
	per := e.CharsPerToken
	if per <= 0 {
		per = 4
	}
	ascii, other := 0, 0
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			ascii++
			i++
			continue
		}
		_, n := utf8.DecodeRuneInString(s[i:])
		other += (n + 1) / 2
		i += n
	}
	t := float64(ascii) / per
	n := int(t)
	if float64(n) < t {
		n++
	}
	return n + other
}

// Message returns the estimated count of m, by the rules of Counter.Message.
func (e Estimator) Message(m defs.Message) int { return MessageCount(e.Text, m) }

// Tool returns the estimated count of a tool schema, by the rules of
// Counter.Tool.
func (e Estimator) Tool(name, description string, parameters json.RawMessage) int {
	return ToolCount(e.Text, name, description, parameters)
}

// Exact returns false.
func (Estimator) Exact() bool { return false }

// Name returns "estimate".
func (Estimator) Name() string { return "estimate" }
