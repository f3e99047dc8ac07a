// Package trimming is the engine of builtin.TrimToolResults: it trims
// the long results of old tool calls in batches, remembers how far it read
// the transcript, and declares its next rewrite (effects.Step.WillRewrite).
// builtin documents the behaviour; only builtin imports it.
package trimming

import (
	"context"
	"slices"
	"sync"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/effects/builtin/internal/transcript"
)

// Config is builtin.TrimConfig with its defaults applied.
type Config struct {
	MaxResultLength int
	PreserveRecent  int // 0: none
	MinSaving       int
	PreserveTurns   int // 0: PreserveRecent decides
	Batch           int
}

// New returns the trimming effect for cfg, whose defaults must be
// applied. It is safe for concurrent use.
func New(cfg Config) effects.Func {
	t := &trimmer{cfg: cfg}
	return t.run
}

type trimmer struct {
	cfg   Config
	mu    sync.Mutex
	cur   transcript.Cursor
	tools int         // tool-role messages seen
	turns int         // assistant messages seen
	cands []candidate // results that may be trimmed once old, oldest first
}

type candidate struct {
	idx, ord int // position in the transcript; ordinal among tool messages
	turn     int // assistant messages before it
	id       string
}

func (t *trimmer) run(ctx context.Context, s *effects.Step) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	msgs := s.Transcript()
	if !t.cur.Valid(msgs) {
		t.cur.Reset()
		t.tools, t.turns, t.cands = 0, 0, t.cands[:0]
	}
	t.scan(msgs)
	old := t.tools - t.cfg.PreserveRecent
	k := 0
	for k < len(t.cands) && t.old(t.cands[k], old) {
		k++
	}
	if k < t.cfg.Batch {
		t.declare(s)
		return nil
	}
	out := s.CopyTranscript()
	n := 0
	for _, c := range t.cands[:k] {
		m := &out[c.idx]
		if m.Role != defs.RoleTool || m.ToolCallID != c.id {
			// The transcript changed under us in a way the cursor missed:
			// read it again from the start and decide at the next step.
			t.cur.Reset()
			t.tools, t.turns, t.cands = 0, 0, t.cands[:0]
			s.WillRewrite(0) // the next run reads it all again
			return nil
		}
		if !transcript.Trimmable(m) {
			continue
		}
		*m = transcript.TrimMessage(*m, t.cfg.MaxResultLength)
		n++
	}
	t.cands = slices.Delete(t.cands, 0, k)
	if n > 0 {
		s.CommitMessages(out)
		t.cur.Set(out)
	}
	t.declare(s)
	return nil
}

// declare tells the runtime (Step.WillRewrite) where the next run may
// start rewriting the transcript: at the first candidate, if as many as
// Batch may be old by then. The next run sees one more assistant message
// (the next reply) and, with PreserveTurns, only the candidates it makes
// old; with PreserveRecent the next step may add any number of tool
// results, which may make every candidate old and fill the batch.
func (t *trimmer) declare(s *effects.Step) {
	if len(t.cands) > 0 && t.cfg.PreserveTurns > 0 {
		due := 0
		for due < len(t.cands) && t.turns+1-t.cands[due].turn >= t.cfg.PreserveTurns {
			due++
		}
		if due < t.cfg.Batch {
			s.WillRewrite(len(s.Transcript()))
			return
		}
	}
	if len(t.cands) == 0 {
		s.WillRewrite(len(s.Transcript()))
		return
	}
	s.WillRewrite(t.cands[0].idx)
}

// old reports whether a candidate is old enough to be trimmed; ord is the
// first tool ordinal PreserveRecent still protects.
func (t *trimmer) old(c candidate, ord int) bool {
	if t.cfg.PreserveTurns > 0 {
		return t.turns-c.turn >= t.cfg.PreserveTurns
	}
	return c.ord < ord
}

// scan reads the messages after the cursor.
func (t *trimmer) scan(msgs []defs.Message) {
	for i := t.cur.N(); i < len(msgs); i++ {
		m := &msgs[i]
		if m.Role == defs.RoleAssistant {
			t.turns++
		}
		if m.Role != defs.RoleTool {
			continue
		}
		ord := t.tools
		t.tools++
		if transcript.Trimmable(m) && transcript.TrimSaving(m.Content, t.cfg.MaxResultLength) >= t.cfg.MinSaving {
			t.cands = append(t.cands, candidate{idx: i, ord: ord, turn: t.turns, id: m.ToolCallID})
		}
	}
	t.cur.Set(msgs)
}
