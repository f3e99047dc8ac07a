package session

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/reprompt/reprompt/defs"
)

// Memory is a Store that keeps sessions in memory, in their stored
// (encoded) form, so that it behaves as a database-backed store does:
// a loaded checkpoint never shares memory with a saved one. It is safe for
// concurrent use. The zero Memory is not ready: use NewMemory.
type Memory struct {
	mu       sync.Mutex
	sessions map[string]*memSession
	now      func() time.Time
}

type memSession struct {
	tip     Tip
	step    int
	done    bool
	updated time.Time
	heads   []memHead       // by seq, oldest first
	msgs    map[int]*memGen // generation → its stored messages
	byStep  map[int][]int64 // step → seqs without Pending, oldest first
	pending map[int][]int64 // step → seqs with Pending, oldest first
	posts   [][]byte        // posted messages (Inbox), encoded: posts[i] has seq i+1
	retired map[int][]Row   // root → chunks of retired call ids, in order
}

// memGen holds the rows of one generation: rows[i] is the message of index
// first+i. A nil row is a dropped one.
type memGen struct {
	first int
	rows  [][]byte
}

type memHead struct {
	seq  int64
	step int
	data []byte
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{sessions: make(map[string]*memSession), now: time.Now}
}

var (
	_ Store      = (*Memory)(nil)
	_ StepReader = (*Memory)(nil)
	_ Inbox      = (*Memory)(nil)
)

// Save implements Store.
func (m *Memory) Save(ctx context.Context, cp *Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[cp.SessionID]
	var tip Tip
	if s != nil {
		tip = s.tip
	}
	w, err := Plan(cp, tip)
	if err != nil {
		return err
	}
	if s == nil {
		s = &memSession{msgs: make(map[int]*memGen), byStep: make(map[int][]int64), pending: make(map[int][]int64)}
		m.sessions[cp.SessionID] = s
	}
	if g := s.msgs[w.Tip.Generation]; g != nil {
		if w.First < g.first || w.First > g.first+len(g.rows) {
			return &CorruptError{ID: cp.SessionID, Seq: tip.Seq, Err: fmt.Errorf("messages %d to %d of generation %d stored, the latest checkpoint names %d", g.first, g.first+len(g.rows), w.Tip.Generation, w.First)}
		}
		g.rows = append(g.rows[:w.First-g.first], w.Messages...)
	} else {
		s.msgs[w.Tip.Generation] = &memGen{first: w.First, rows: w.Messages}
	}
	if w.Retired != nil {
		if s.retired == nil {
			s.retired = make(map[int][]Row)
		}
		chunks := slices.DeleteFunc(s.retired[w.Tip.Root], func(r Row) bool { return r.Index >= w.RetiredFirst })
		s.retired[w.Tip.Root] = append(chunks, Row{Index: w.RetiredFirst, Data: w.Retired})
	}
	s.heads = append(s.heads, memHead{seq: w.Tip.Seq, step: w.Step, data: w.Head})
	if w.Pending {
		s.pending[w.Step] = append(s.pending[w.Step], w.Tip.Seq)
	} else {
		s.byStep[w.Step] = append(s.byStep[w.Step], w.Tip.Seq)
	}
	s.tip, s.step, s.done, s.updated = w.Tip, w.Step, w.Done, m.now()
	cp.Seq, cp.Incarnation = w.Tip.Seq, w.Tip.Incarnation
	return nil
}

// Latest implements Store.
func (m *Memory) Latest(ctx context.Context, id string) (*Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[id]
	if s == nil {
		return nil, &NotFoundError{ID: id}
	}
	return s.load(id, s.tip.Seq)
}

// AtStep implements Store.
func (m *Memory) AtStep(ctx context.Context, id string, step int) (*Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[id]
	if s == nil {
		return nil, &NotFoundError{ID: id}
	}
	seqs := s.byStep[step]
	if len(seqs) == 0 {
		seqs = s.pending[step]
	}
	if len(seqs) == 0 {
		return nil, &NotFoundError{ID: id, Step: step, AtStep: true}
	}
	return s.load(id, seqs[len(seqs)-1])
}

// AtSteps implements StepReader.
func (m *Memory) AtSteps(ctx context.Context, id string, first, last int) iter.Seq2[*Checkpoint, error] {
	return ReadSteps(ctx, first, last, func() (iter.Seq2[*Checkpoint, error], error) {
		return m.atSteps(id, first, last)
	})
}

func (m *Memory) atSteps(id string, first, last int) (iter.Seq2[*Checkpoint, error], error) {
	h, rows := m.stepHeads(id, first, last)
	// Decoded outside the lock: what a Save stored is never changed.
	return LoadSteps(h, func(root, gen, n int) ([]GenerationRow, error) {
		return slices.DeleteFunc(rows, func(r GenerationRow) bool {
			return r.Generation < root || r.Generation > gen || r.Index >= n
		}), nil
	})
}

// stepHeads returns the heads of session id's steps from first to last,
// as AtStep picks them, and every message row of the session.
func (m *Memory) stepHeads(id string, first, last int) (*StepHeads, []GenerationRow) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[id]
	h := &StepHeads{ID: id, First: first, Last: last, Known: s != nil}
	if s == nil {
		return h, nil
	}
	for step := range s.steps(first, last) {
		seqs := s.byStep[step]
		if len(seqs) == 0 {
			seqs = s.pending[step]
		}
		seq := seqs[len(seqs)-1]
		h.Heads = append(h.Heads, StepHead{Step: step, Seq: seq, Head: s.heads[seq-1].data})
	}
	for root, chunks := range s.retired {
		for _, c := range chunks {
			h.Retired = append(h.Retired, GenerationRow{Generation: root, Row: c})
		}
	}
	var rows []GenerationRow
	for g, stored := range s.msgs {
		for i, d := range stored.rows {
			if d != nil {
				rows = append(rows, GenerationRow{Generation: g, Row: Row{Index: stored.first + i, Data: d}})
			}
		}
	}
	return h, rows
}

// steps yields, in order, the steps from first to last that have a
// checkpoint.
func (s *memSession) steps(first, last int) iter.Seq[int] {
	var steps []int
	for _, byStep := range []map[int][]int64{s.byStep, s.pending} {
		for step, seqs := range byStep {
			if first <= step && step <= last && len(seqs) > 0 {
				steps = append(steps, step)
			}
		}
	}
	slices.Sort(steps)
	return slices.Values(slices.Compact(steps))
}

func (s *memSession) load(id string, seq int64) (*Checkpoint, error) {
	h := s.heads[seq-1]
	retired := func(root, count int) ([]Row, error) {
		return slices.DeleteFunc(slices.Clone(s.retired[root]), func(r Row) bool { return r.Index >= count }), nil
	}
	return LoadRetired(id, seq, h.data, func(root, gen, n int) ([]Row, error) {
		// From the newest generation of the lineage down, each index takes
		// the first row found.
		var gens []int
		for g := range s.msgs {
			if root <= g && g <= gen {
				gens = append(gens, g)
			}
		}
		slices.Sort(gens)
		// n comes from the head, which may be damaged: allocate only for
		// the indexes stored.
		stored := 0
		for _, g := range gens {
			stored = max(stored, s.msgs[g].first+len(s.msgs[g].rows))
		}
		n = min(n, stored)
		data := make([][]byte, n)
		left := n
		for k := len(gens) - 1; k >= 0 && left > 0; k-- {
			stored := s.msgs[gens[k]]
			for i := stored.first; i < min(n, stored.first+len(stored.rows)); i++ {
				if data[i] == nil && stored.rows[i-stored.first] != nil {
					data[i] = stored.rows[i-stored.first]
					left--
				}
			}
		}
		rows := make([]Row, 0, n-left)
		for i, d := range data {
			if d != nil { // else a dropped row: Load reports it missing
				rows = append(rows, Row{Index: i, Data: d})
			}
		}
		return rows, nil
	}, retired)
}

// Rows returns the number of message rows stored for session id, in all
// its generations (0 for an unknown session). It shows what the session
// costs: a new generation stores only the messages from its Base on.
func (m *Memory) Rows(ctx context.Context, id string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[id]
	if s == nil {
		return 0, nil
	}
	n := 0
	for _, g := range s.msgs {
		for _, r := range g.rows {
			if r != nil {
				n++
			}
		}
	}
	return n, nil
}

// List implements Store.
func (m *Memory) List(ctx context.Context) ([]Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Info, 0, len(m.sessions))
	for id, s := range m.sessions {
		out = append(out, s.info(id))
	}
	slices.SortFunc(out, func(a, b Info) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out, nil
}

func (s *memSession) info(id string) Info {
	return Info{ID: id, Seq: s.tip.Seq, Step: s.step, Generation: s.tip.Generation, Incarnation: s.tip.Incarnation, Done: s.done, Updated: s.updated}
}

// Stat implements Store.
func (m *Memory) Stat(ctx context.Context, id string) (Info, error) {
	if err := ctx.Err(); err != nil {
		return Info{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return Info{}, &NotFoundError{ID: id}
	}
	return s.info(id), nil
}

// Delete implements Store.
func (m *Memory) Delete(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sessions, id)
	return nil
}

// Post implements Inbox.
func (m *Memory) Post(ctx context.Context, id string, msg defs.Message) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := CheckPost(id, msg); err != nil {
		return 0, err
	}
	data, err := EncodeMessage(msg)
	if err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[id]
	if s == nil {
		return 0, &NotFoundError{ID: id}
	}
	s.posts = append(s.posts, data)
	return int64(len(s.posts)), nil
}

// Posted implements Inbox.
func (m *Memory) Posted(ctx context.Context, id string, after int64) ([]Post, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	var posts [][]byte
	if s := m.sessions[id]; s != nil && after < int64(len(s.posts)) {
		posts = s.posts[max(after, 0):] // never changed: decoded outside the lock
	}
	m.mu.Unlock()
	if len(posts) == 0 {
		return nil, nil
	}
	out := make([]Post, len(posts))
	for i, data := range posts {
		seq := max(after, 0) + int64(i) + 1
		p, err := DecodePost(id, seq, data)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}
