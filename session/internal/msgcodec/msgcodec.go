// Package msgcodec is the stored form of a message and of a tool result,
// which package session writes for every store: their JSON, with each tool
// call's arguments kept byte for byte as received. Arguments that
// encoding/json would not give back byte for byte (not valid JSON, or JSON
// that it compacts or escapes) are also stored in a "raw_arguments" field;
// under "arguments" they appear as encoding/json writes them, or, when they
// are not JSON, as a JSON string, which is what a decoder that predates
// "raw_arguments" reads.
//
// Package session exports the encoding (session.EncodeMessage,
// session.DecodeMessage) and the stored form of a checkpoint's pending
// reply, built from Message and Result.
package msgcodec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/reprompt/reprompt/defs"
)

// Encode returns the stored form of one message (see the package
// documentation).
func Encode(m defs.Message) ([]byte, error) {
	b, err := json.Marshal(Store(m))
	if err != nil {
		return nil, fmt.Errorf("encode message: %w", err)
	}
	return b, nil
}

// Decode decodes a message written by Encode. Unknown fields are ignored;
// a message without a role is an error.
func Decode(data []byte) (defs.Message, error) {
	var s Message
	if err := json.Unmarshal(data, &s); err != nil {
		return defs.Message{}, err
	}
	m, err := s.Load()
	if err != nil {
		return defs.Message{}, err
	}
	if m.Role == "" {
		return defs.Message{}, errors.New("message has no role")
	}
	return m, nil
}

// Message is the stored form of a message: its JSON, and the arguments of
// the tool calls whose JSON does not give them back exactly, by the call's
// index. (defs.Message has no JSON methods of its own: the embedded fields
// are written as they are.)
type Message struct {
	defs.Message
	RawArguments map[int][]byte `json:"raw_arguments,omitempty"`
}

// Store returns the stored form of m. It shares m's tool calls unless it
// must change their arguments, and then copies them: m is not modified.
func Store(m defs.Message) Message {
	s := Message{Message: m}
	for i, c := range m.ToolCalls {
		v, raw := arguments(c.Arguments)
		if !raw {
			continue
		}
		if s.RawArguments == nil {
			s.RawArguments = make(map[int][]byte)
			s.Message.ToolCalls = slices.Clone(m.ToolCalls)
		}
		s.Message.ToolCalls[i].Arguments = v
		s.RawArguments[i] = c.Arguments // nil stays nil: it is written as null
	}
	return s
}

// Load returns the message s stores, with the arguments of its tool calls
// as received. Raw arguments of a call s does not have are an error.
func (s *Message) Load() (defs.Message, error) {
	m := s.Message
	for i, raw := range s.RawArguments {
		if i < 0 || i >= len(m.ToolCalls) {
			return defs.Message{}, fmt.Errorf("raw arguments of tool call %d of a message with %d tool calls", i, len(m.ToolCalls))
		}
		m.ToolCalls[i].Arguments = raw
	}
	return m, nil
}

// Result is the stored form of a tool result: nil Arguments are omitted,
// others that their JSON does not give back are kept in RawArguments.
type Result struct {
	defs.ToolResult
	RawArguments *[]byte `json:"raw_arguments,omitempty"`
}

// StoreResults returns the stored form of rs: nil for nil rs, else one
// Result each.
func StoreResults(rs []defs.ToolResult) []Result {
	if rs == nil {
		return nil
	}
	s := make([]Result, len(rs))
	for i, r := range rs {
		s[i].ToolResult = r
		if r.Arguments == nil {
			continue // omitted, and loaded as nil
		}
		if v, raw := arguments(r.Arguments); raw {
			a := []byte(r.Arguments)
			s[i].Arguments, s[i].RawArguments = v, &a
		}
	}
	return s
}

// LoadResults returns the tool results rs stores (nil for nil rs), with
// their arguments as received.
func LoadResults(rs []Result) []defs.ToolResult {
	if rs == nil {
		return nil
	}
	out := make([]defs.ToolResult, len(rs))
	for i, r := range rs {
		out[i] = r.ToolResult
		if r.RawArguments != nil {
			out[i].Arguments = *r.RawArguments
		}
	}
	return out
}

// arguments returns what to write under "arguments" for args, and whether
// args must be written as received beside it because decoding that would
// not give them back byte for byte.
func arguments(args json.RawMessage) (json.RawMessage, bool) {
	if args == nil {
		return nil, true // written as null, which decodes as "null"
	}
	if json.Valid(args) && canonical(args) {
		return args, false // the common case, without allocating
	}
	b, err := json.Marshal(args) // what encoding/json writes for args
	if err != nil {
		// Not JSON: readable, and never mistaken for a JSON object.
		s, _ := json.Marshal(string(args))
		return s, true
	}
	return args, !bytes.Equal(b, args)
}

// canonical reports whether valid JSON is as encoding/json writes it: no
// whitespace outside strings, and none of the characters it escapes (<, >,
// &, U+2028, U+2029).
func canonical(data []byte) bool {
	inString, escaped := false, false
	for i, c := range data {
		switch {
		case c == '<' || c == '>' || c == '&':
			return false
		case c == 0xE2 && i+2 < len(data) && data[i+1] == 0x80 && (data[i+2] == 0xA8 || data[i+2] == 0xA9):
			return false
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			return false
		}
	}
	return true
}
