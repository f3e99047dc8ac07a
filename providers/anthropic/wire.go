package anthropic

import (
	"bytes"
	"fmt"
	"slices"
	"sync"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/lanes"
	"github.com/reprompt/reprompt/llm"
)

// The request body is assembled from cached bytes instead of being
// encoded whole by the SDK on every call, which costs a step the whole
// transcript:
//
//	{"max_tokens":…,"messages":[ <turns> ],"model":…,"system":…,"tools":…}
//
// The part around the messages (the layout: the configuration and the
// tools, with their cache breakpoint) is encoded by the SDK's own types,
// once, and again only when one of them changes; the system prompt, which
// the runtime renders anew at each step, is encoded apart and spliced in.
// Each message is mapped to its content blocks once, when it first
// appears, and each block encoded once by the SDK's own MarshalJSON, which
// gives the same bytes as the block inside a whole request; a turn is
// written as the SDK writes it, {"content":[<blocks>],"role":"user"}. The
// cache breakpoints are placed at every request by placeBreakpoints, on
// the cached blocks; a block it marks is sent with its marked encoding
// (made once for a kind of breakpoint), and unmarked again afterwards.
// The body is thus byte for byte the one the SDK would send for
// params(req), which TestWireBodyMatchesSDK and
// TestWireRandomTranscripts check.
//
// A cached message is reused only if it is the same message on the wire
// (role, content, tool calls, tool_call_id, is_error, thinking blocks
// compared in full; strings shared with the transcript compare as fast as
// pointers), so the cache cannot go stale whatever the caller does with
// its slices; and an encoding serves one place of a request, since the
// breakpoints are set on its blocks.

// maxLanes bounds the conversations whose encodings a Model keeps (an
// agent and its sub-agents share one Model).
const maxLanes = 4

// encoder makes the request bodies of one Model. Its mutex also guards the
// cached blocks while placeBreakpoints marks them.
type encoder struct {
	mu      sync.Mutex
	lanes   []*lane
	clock   uint64
	skel    skeleton
	turns   []turn               // scratch, reused from call to call
	spans   []span               // scratch: the messages of each turn
	encoded int                  // blocks encoded, for tests of the cache
	cur     *lane                // the lane of the body under way
	marking []*encMsg            // the messages whose marked encodings it uses
	sys     []sdk.TextBlockParam // scratch: the system prompt's blocks
}

// lane is the encoded transcript of one conversation.
type lane struct {
	msgs    []*encMsg
	lastUse uint64
	// marked are the messages whose marked encodings the lane's last body
	// used: a marked encoding serves the requests that mark its block
	// (its request, and the next one or two of the conversation, which
	// read what it wrote); the others are dropped (see dropMarked), lest
	// every block of a long conversation be held twice.
	marked []*encMsg
}

// span is the range of a lane's messages that make one turn.
type span struct{ from, to int }

// encMsg is one message of a transcript with its encoding.
type encMsg struct {
	// What reaches the wire, copied from the message.
	role       defs.Role
	content    string
	toolCallID string
	isError    bool
	toolCalls  []defs.ToolCall
	thinking   string

	assistant bool
	blocks    []sdk.ContentBlockParamUnion // capacity clipped, so that a merge copies
	enc       []byte                       // the blocks' encodings, comma-separated
	ends      []int                        // ends[i]: end of block i in enc
	marked    []markedEnc                  // per block, made when first marked
}

// markedEnc is a block's encoding with a cache breakpoint.
type markedEnc struct {
	mark markKey
	enc  []byte
}

// skeleton is the encoded request around the messages and the system
// prompt, and what it was built from: the configuration, tools and output.
// The system prompt, which the runtime renders anew at every step, is
// encoded apart and spliced in, so that a new one costs its own encoding
// only.
type skeleton struct {
	built   bool
	tools   []llm.ToolSpec
	output  *llm.OutputSpec
	frame   sdk.MessageNewParams // without system prompt, messages or breakpoints
	layouts [2]layout            // [0] for a request without a system prompt, [1] with one
	// The last system prompt encoded: its blocks' texts and breakpoints,
	// and the JSON array.
	sysTexts []string
	sysMarks []markKey
	sysEnc   []byte
}

// layout is the encoded request around the messages (and the system
// prompt, when it has one).
type layout struct {
	ok    bool
	marks []markKey // the breakpoints of the request and its tools it was encoded with
	head  []byte    // up to `"messages":[`
	mid   []byte    // from the `]` after the messages to `"system":`, with a system prompt
	tail  []byte    // the rest: from `]` without a system prompt, after its array with one
}

// sysSentinel is the text of the system block a layout is encoded with,
// to be found and replaced.
const sysSentinel = "\x00reprompt: the system prompt goes here\x00"

// markKey is a cache_control as far as the wire shows it.
type markKey struct {
	typ string
	ttl sdk.CacheControlEphemeralTTL
}

func markOf(cc *sdk.CacheControlEphemeralParam) markKey {
	if cc == nil {
		return markKey{}
	}
	return markKey{typ: string(cc.Type), ttl: cc.TTL}
}

// body returns the request body of req, as the SDK would encode params(req).
// Its errors are *llm.ModelError, not retryable. The body is a new slice,
// never modified afterwards.
func (m *Model) body(req *llm.Request) ([]byte, error) {
	e := &m.enc
	e.mu.Lock()
	defer e.mu.Unlock()
	s, err := m.skeleton(req)
	if err != nil {
		return nil, err
	}
	sys, first := systemOf(req, e.sys[:0])
	e.sys = sys
	msgs, err := e.lane(req.Messages, first)
	if err != nil {
		return nil, m.requestError(err)
	}

	// The turns, on the cached blocks.
	turns, spans := e.turns[:0], e.spans[:0]
	size := 0
	for i, em := range msgs {
		if len(em.blocks) == 0 {
			continue
		}
		size += len(em.enc) + 1
		if n := len(turns); n > 0 && turns[n-1].assistant == em.assistant {
			turns[n-1].blocks = append(turns[n-1].blocks, em.blocks...)
			spans[n-1].to = i + 1
			continue
		}
		turns = append(turns, turn{assistant: em.assistant, blocks: em.blocks})
		spans = append(spans, span{i, i + 1})
	}
	p := s.frame
	p.System = sys
	ends := endsBy(len(req.Messages), first, req.Repeated, req.Committed, func(i int) (int, bool) {
		em := msgs[i-first]
		return len(em.blocks), em.assistant
	})
	m.placeBreakpoints(&p, turns, req, ends)
	lay, sysEnc, err := s.encode(&p)
	if err != nil {
		e.reset(p.Tools, turns)
		return nil, m.requestError(fmt.Errorf("encoding the request: %w", err))
	}

	const userTurn, assistantTurn = `],"role":"user"}`, `],"role":"assistant"}`
	size += len(lay.head) + len(lay.mid) + len(sysEnc) + len(lay.tail) + len(turns)*(len(`{"content":[`)+len(assistantTurn)+1)
	b := make([]byte, 0, size+256)
	b = append(b, lay.head...)
	for ti, sp := range spans {
		if ti > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"content":[`...)
		k := 0 // blocks written in this turn
		for _, em := range msgs[sp.from:sp.to] {
			if len(em.blocks) == 0 {
				continue
			}
			if k > 0 {
				b = append(b, ',')
			}
			k += len(em.blocks)
			if b, err = e.appendBlocks(b, em); err != nil {
				e.reset(p.Tools, turns)
				return nil, m.requestError(fmt.Errorf("encoding the request: %w", err))
			}
		}
		if turns[ti].assistant {
			b = append(b, assistantTurn...)
		} else {
			b = append(b, userTurn...)
		}
	}
	b = append(b, lay.mid...)
	b = append(b, sysEnc...)
	b = append(b, lay.tail...)
	e.reset(p.Tools, turns)
	clear(turns) // the scratch keeps no blocks alive
	e.turns, e.spans = turns[:0], spans
	e.dropMarked()
	return b[:len(b):len(b)], nil
}

// reset removes the breakpoints placeBreakpoints set on cached tools and
// blocks.
func (e *encoder) reset(tools []sdk.ToolUnionParam, turns []turn) {
	for _, t := range tools {
		if cc := t.GetCacheControl(); cc != nil {
			*cc = sdk.CacheControlEphemeralParam{}
		}
	}
	for _, t := range turns {
		for _, b := range t.blocks {
			if cc := b.GetCacheControl(); cc != nil {
				*cc = sdk.CacheControlEphemeralParam{}
			}
		}
	}
}

// appendBlocks appends em's blocks to b, comma-separated: their cached
// encodings, and for a block that carries a breakpoint its marked one.
func (e *encoder) appendBlocks(b []byte, em *encMsg) ([]byte, error) {
	marked := false
	for i := range em.blocks {
		if markOf(em.blocks[i].GetCacheControl()) != (markKey{}) {
			marked = true
			break
		}
	}
	if !marked {
		return append(b, em.enc...), nil
	}
	e.marking = append(e.marking, em)
	start := 0
	for i := range em.blocks {
		if i > 0 {
			b = append(b, ',')
		}
		cc := em.blocks[i].GetCacheControl()
		if markOf(cc) == (markKey{}) {
			b = append(b, em.enc[start:em.ends[i]]...)
		} else {
			if em.marked == nil {
				em.marked = make([]markedEnc, len(em.blocks))
			}
			me := &em.marked[i]
			if me.enc == nil || me.mark != markOf(cc) {
				enc, err := em.blocks[i].MarshalJSON()
				if err != nil {
					return b, err
				}
				e.encoded++
				*me = markedEnc{mark: markOf(cc), enc: enc}
			}
			b = append(b, me.enc...)
		}
		start = em.ends[i] + 1
	}
	return b, nil
}

// dropMarked drops the marked encodings of the messages the lane's last
// body marked and this one did not.
func (e *encoder) dropMarked() {
	l := e.cur
	for _, em := range l.marked {
		if !slices.Contains(e.marking, em) {
			em.marked = nil
		}
	}
	l.marked = append(l.marked[:0], e.marking...)
	clear(e.marking)
	e.marking = e.marking[:0]
}

// encode returns the layout of p (a request whose breakpoints are placed
// but whose messages are left out) and its system prompt's encoding, each
// made again when what it was made from changed.
func (s *skeleton) encode(p *sdk.MessageNewParams) (*layout, []byte, error) {
	marks := []markKey{markOf(&p.CacheControl)} // the request's own, which the API also takes
	for _, t := range p.Tools {
		marks = append(marks, markOf(t.GetCacheControl()))
	}
	withSys := len(p.System) > 0
	lay := &s.layouts[0]
	if withSys {
		lay = &s.layouts[1]
	}
	if !lay.ok || !slices.Equal(marks, lay.marks) {
		q := *p
		q.Messages = []sdk.MessageParam{}
		q.System = nil
		if withSys {
			q.System = []sdk.TextBlockParam{{Text: sysSentinel}}
		}
		b, err := q.MarshalJSON()
		if err != nil {
			return nil, nil, err
		}
		const hole = `"messages":[]`
		at := bytes.Index(b, []byte(hole))
		if at < 0 {
			return nil, nil, fmt.Errorf("no messages field in %.200s", b)
		}
		*lay = layout{marks: marks, head: slices.Clip(b[:at+len(hole)-1]), tail: b[at+len(hole)-1:]}
		if withSys {
			sb, err := q.System[0].MarshalJSON()
			if err != nil {
				return nil, nil, err
			}
			field := slices.Concat([]byte(`"system":[`), sb, []byte(`]`))
			i := bytes.Index(lay.tail, field)
			if i < 0 || bytes.Count(lay.tail, field) != 1 {
				return nil, nil, fmt.Errorf("no single system field in %.200s", lay.tail)
			}
			n := len(`"system":`)
			lay.mid, lay.tail = slices.Clip(lay.tail[:i+n]), lay.tail[i+len(field):]
		}
		lay.ok = true
	}
	if !withSys {
		return lay, nil, nil
	}
	same := len(p.System) == len(s.sysTexts)
	for i := 0; same && i < len(p.System); i++ {
		same = p.System[i].Text == s.sysTexts[i] && markOf(&p.System[i].CacheControl) == s.sysMarks[i]
	}
	if !same {
		enc := []byte{'['}
		s.sysTexts, s.sysMarks = s.sysTexts[:0], s.sysMarks[:0]
		for i := range p.System {
			b, err := p.System[i].MarshalJSON()
			if err != nil {
				return nil, nil, err
			}
			if i > 0 {
				enc = append(enc, ',')
			}
			enc = append(enc, b...)
			s.sysTexts = append(s.sysTexts, p.System[i].Text)
			s.sysMarks = append(s.sysMarks, markOf(&p.System[i].CacheControl))
		}
		s.sysEnc = append(enc, ']')
	}
	return lay, s.sysEnc, nil
}

// skeleton returns the skeleton for req's configuration, tools and
// output, made again when one of them changed.
func (m *Model) skeleton(req *llm.Request) (*skeleton, error) {
	s := &m.enc.skel
	out := req.Output
	if out != nil && out.Mode != llm.OutputNative {
		out = nil // the answer tool is among the tools
	}
	if s.built && sameTools(s.tools, req.Tools) && sameOutput(s.output, out) {
		return s, nil
	}
	frame, err := m.base(req.Tools, out)
	if err != nil {
		return nil, err
	}
	*s = skeleton{built: true, frame: frame}
	for _, t := range req.Tools {
		s.tools = append(s.tools, llm.ToolSpec{Name: t.Name, Description: t.Description, Parameters: bytes.Clone(t.Parameters)})
	}
	if out != nil {
		c := *out
		c.Schema = bytes.Clone(out.Schema)
		s.output = &c
	}
	return s, nil
}

// sameTools reports whether a and b are the same tools on the wire.
func sameTools(a, b []llm.ToolSpec) bool {
	return slices.EqualFunc(a, b, func(x, y llm.ToolSpec) bool {
		return x.Name == y.Name && x.Description == y.Description && bytes.Equal(x.Parameters, y.Parameters)
	})
}

// sameOutput reports whether a and b ask for the same output format.
func sameOutput(a, b *llm.OutputSpec) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Name == b.Name && a.Mode == b.Mode && bytes.Equal(a.Schema, b.Schema)
}

// lane returns the encodings of msgs (the request's messages, of which
// the first are in the system prompt) from first on, from the lane of
// their conversation: those it held already reused, the others encoded.
func (e *encoder) lane(msgs []defs.Message, first int) ([]*encMsg, error) {
	msgs = msgs[first:]
	e.clock++
	l, p := e.pick(msgs) // p: the longest prefix the lane holds
	l.lastUse = e.clock
	if p == len(msgs) {
		e.cur = l
		return l.msgs[:p:p], nil // the same again, or an earlier request's
	}
	if p == len(l.msgs) {
		// The common case: only new messages.
		for i := p; i < len(msgs); i++ {
			em, err := e.encode(&msgs[i], first+i)
			if err != nil {
				return nil, err
			}
			l.msgs = append(l.msgs, em)
		}
		e.cur = l
		return l.msgs[:len(l.msgs):len(l.msgs)], nil
	}
	// A rewrite (trimmed, compacted, a message replaced): keep the
	// messages still present.
	index := map[lanes.Key][]*encMsg{}
	for _, em := range l.msgs[p:] {
		k := lanes.Key{Role: em.role, N: len(em.content), ID: em.id()}
		index[k] = append(index[k], em)
	}
	kept := make([]*encMsg, p, len(msgs))
	copy(kept, l.msgs)
	reused := 0
	for i := p; i < len(msgs); i++ {
		msg := &msgs[i]
		// An encoding is used once: the breakpoints are set on its
		// blocks, which must not show in two places of a transcript that
		// holds the same message twice.
		var found *encMsg
		k := lanes.KeyOf(msg)
		for j, em := range index[k] {
			if em.same(msg) {
				found = em
				index[k] = slices.Delete(index[k], j, j+1)
				break
			}
		}
		if found == nil {
			var err error
			if found, err = e.encode(msg, first+i); err != nil {
				return nil, err
			}
		} else {
			reused++
		}
		kept = append(kept, found)
	}
	if lanes.Diverged(len(l.msgs), p, reused) {
		// Another conversation that opens as the lane's does: the lane
		// stays its own.
		l = e.other(l)
		l.lastUse = e.clock
	}
	l.msgs = kept
	e.cur = l
	return kept[:len(kept):len(kept)], nil
}

func (em *encMsg) id() string {
	if len(em.toolCalls) > 0 {
		return em.toolCalls[0].ID
	}
	return em.toolCallID
}

// same reports whether m is the message em was encoded from, as far as the
// wire shows it.
func (em *encMsg) same(m *defs.Message) bool {
	return em.role == m.Role && em.content == m.Content && em.toolCallID == m.ToolCallID &&
		em.isError == m.IsError && (m.Role != defs.RoleAssistant || em.thinking == m.Meta[MetaThinking]) &&
		slices.EqualFunc(em.toolCalls, m.ToolCalls, func(x, y defs.ToolCall) bool {
			return x.ID == y.ID && x.Name == y.Name && bytes.Equal(x.Arguments, y.Arguments)
		})
}

// encode maps msg, the i-th message of the request, to its blocks and
// encodes them.
func (e *encoder) encode(msg *defs.Message, i int) (*encMsg, error) {
	blocks, assistant, err := blocksOf(msg, i)
	if err != nil {
		return nil, err
	}
	em := &encMsg{
		role: msg.Role, content: msg.Content, toolCallID: msg.ToolCallID, isError: msg.IsError,
		assistant: assistant, blocks: slices.Clip(blocks),
	}
	if msg.Role == defs.RoleAssistant {
		em.thinking = msg.Meta[MetaThinking]
	}
	if len(msg.ToolCalls) > 0 {
		em.toolCalls = make([]defs.ToolCall, len(msg.ToolCalls))
		for j, tc := range msg.ToolCalls {
			em.toolCalls[j] = defs.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: bytes.Clone(tc.Arguments)}
		}
	}
	for j := range blocks {
		enc, err := blocks[j].MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		e.encoded++
		if j > 0 {
			em.enc = append(em.enc, ',')
		}
		em.enc = append(em.enc, enc...)
		em.ends = append(em.ends, len(em.enc))
	}
	em.enc = slices.Clip(em.enc)
	return em, nil
}

// pick returns the lane that holds the longest prefix of msgs, with the
// length of that prefix (see lanes.Pick), or, when none holds even the
// first message, a free or the least recently used lane.
func (e *encoder) pick(msgs []defs.Message) (*lane, int) {
	if l, p := lanes.Pick(e.lanes, len(msgs), func(l *lane, i int) bool { return l.msgs[i].same(&msgs[i]) }); l != nil {
		return l, p
	}
	return e.other(nil), 0
}

// other returns a free lane, or the least recently used one but not (a
// lane whose conversation is left alone), emptied.
func (e *encoder) other(not *lane) *lane { return lanes.Other(&e.lanes, maxLanes, not) }

func (l *lane) Len() int        { return len(l.msgs) }
func (l *lane) LastUse() uint64 { return l.lastUse }
