package session

import (
	"context"
	"errors"
	"iter"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/session/internal/lineage"
)

// StepReader is implemented by a Store that reads the checkpoints of many
// steps of a session in one pass, at about the cost of the session's own
// size: each stored head and message row is read and decoded at most once,
// however many checkpoints share it, where calling AtStep for each step
// reads every checkpoint's whole transcript again. Memory and the stores
// of packages session/sqlite and session/postgres implement it; AtSteps
// (the function) uses it when a store does, and AtStep otherwise.
type StepReader interface {
	// AtSteps yields, for each step from first to last in order, what
	// AtStep(ctx, id, step) returns: the i-th pair is that of step
	// first+i, a checkpoint, or a *NotFoundError for a step without one, or
	// the *CorruptError or *VersionError of a damaged checkpoint (the same
	// error AtStep returns, and the other steps still load). Nothing is
	// yielded when first > last. The checkpoints are read from one
	// snapshot of the store.
	//
	// The sequence ends before last only after a pair whose error concerns
	// the whole read: the *NotFoundError of an unknown session, ctx's
	// error, or a failure of the store.
	//
	// The transcripts of the checkpoints yielded share their messages
	// (those of one generation's lineage are one array): the caller may
	// keep and read them all, but must copy a message or a transcript
	// before modifying it. Appending to a transcript does not modify
	// another's.
	AtSteps(ctx context.Context, id string, first, last int) iter.Seq2[*Checkpoint, error]
}

// AtSteps yields, for each step of session id from first to last in
// order, what st.AtStep(ctx, id, step) returns, as StepReader.AtSteps
// does: through st's own AtSteps when st is a StepReader, else by calling
// AtStep for each step, ending after an unknown session's *NotFoundError
// or once ctx is done.
func AtSteps(ctx context.Context, st Store, id string, first, last int) iter.Seq2[*Checkpoint, error] {
	if sr, ok := st.(StepReader); ok {
		return sr.AtSteps(ctx, id, first, last)
	}
	return func(yield func(*Checkpoint, error) bool) {
		if first > last {
			return
		}
		for step := first; ; step++ {
			cp, err := st.AtStep(ctx, id, step)
			if !yield(cp, err) || step == last {
				return
			}
			if nf, ok := errors.AsType[*NotFoundError](err); (ok && !nf.AtStep) || (err != nil && ctx.Err() != nil) {
				return
			}
		}
	}
}

// ReadSteps returns the sequence of a store's StepReader.AtSteps for the
// steps from first to last: when ranged over, it calls read, which reads
// what it needs in one snapshot of the store and returns the sequence of
// its checkpoints (LoadSteps'), and yields its pairs. It yields nothing
// when first > last, read's error alone when read fails, and ends with
// ctx's error once ctx is done. Each range calls read again.
func ReadSteps(ctx context.Context, first, last int, read func() (iter.Seq2[*Checkpoint, error], error)) iter.Seq2[*Checkpoint, error] {
	return func(yield func(*Checkpoint, error) bool) {
		if first > last {
			return
		}
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		steps, err := read()
		if err != nil {
			yield(nil, err)
			return
		}
		for cp, err := range steps {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			if !yield(cp, err) {
				return
			}
		}
	}
}

// StepHeads is what a store found to answer StepReader.AtSteps, for
// LoadSteps: the head that AtStep would load for each step from First to
// Last that has a checkpoint.
type StepHeads struct {
	// ID names the session.
	ID string
	// First and Last are the steps asked for.
	First, Last int
	// Known reports that the store knows the session: a step without a
	// head is then a *NotFoundError with AtStep set, as AtStep reports it,
	// and otherwise the session's *NotFoundError. When Known is false and
	// Heads is empty, the sequence is that error alone.
	Known bool
	// Heads are the heads found, ordered by Step, at most one a step.
	Heads []StepHead
	// Retired are the session's stored chunks of retired call ids (see
	// Write.Retired), each with its root as Generation and its first index
	// as Index, in any order: those of every root the heads name, or nil
	// when no head names stored ids.
	Retired []GenerationRow
}

// StepHead is a stored head that AtStep would load for Step: the one filed
// under (session, Seq).
type StepHead struct {
	Step int
	Seq  int64
	Head []byte
}

// GenerationRow is a stored message row and the generation it is stored
// under.
type GenerationRow struct {
	Generation int
	Row
}

// LoadSteps decodes the checkpoints of h as Load decodes each one,
// reading their messages once for all of them, for a store's
// StepReader.AtSteps. It decodes every head, then calls rows at most once,
// before it returns, with the lowest root, the highest generation and the
// largest message count that the decoded heads name; rows returns every
// stored row of the session whose generation is in [root, generation] and
// whose index is below count, each once with its generation, in any order
// (an error it returns is returned as is). count is read from storage and
// may be damaged (10^15): rows must not allocate in proportion to it.
//
// The sequence returned yields, for each step from h.First to h.Last,
// the checkpoint or the error that Load returns for its head, or the
// *NotFoundError of a step without head (see StepHeads.Known). It holds
// what it needs: the store may end its read before ranging over it.
// LoadSteps decodes the heads and the rows on every processor
// (GOMAXPROCS), each once; the transcripts yielded share their messages
// (see StepReader.AtSteps). The sequence may be ranged over once: a
// second range yields nothing.
func LoadSteps(h *StepHeads, rows func(root, generation, count int) ([]GenerationRow, error)) (iter.Seq2[*Checkpoint, error], error) {
	b := &batch{id: h.ID, need: map[[2]int]int{}, lineages: map[[2]int]*resolved{}, rows: lineage.New(0, nil), decoded: map[[2]int]decoded{}, retired: map[int][]Row{}}
	for _, r := range h.Retired {
		b.retired[r.Generation] = append(b.retired[r.Generation], r.Row)
	}
	for _, rs := range b.retired {
		slices.SortFunc(rs, func(a, b Row) int { return a.Index - b.Index })
	}
	// The heads decoded, without the stored ones: those are not kept.
	type found struct {
		step int
		seq  int64
		head *Head
		err  error
	}
	heads := make([]found, len(h.Heads))
	parallel(len(h.Heads), func(i int) {
		sh := &h.Heads[i]
		heads[i] = found{step: sh.Step, seq: sh.Seq}
		heads[i].head, heads[i].err = decodeFiled(h.ID, sh.Seq, sh.Head)
	})
	root, gen, count := -1, -1, 0
	for _, f := range heads {
		if hd := f.head; hd != nil && hd.Messages > 0 {
			key := [2]int{hd.Root, hd.Checkpoint.Generation}
			b.need[key] = max(b.need[key], hd.Messages)
			if root < 0 || hd.Root < root {
				root = hd.Root
			}
			gen, count = max(gen, hd.Checkpoint.Generation), max(count, hd.Messages)
		}
	}
	if count > 0 {
		stored, err := rows(root, gen, count)
		if err != nil {
			return nil, err
		}
		// Every row read is decoded, on every processor: each belongs to a
		// checkpoint, but for those past a damaged count or in generations
		// between lineages. A row that does not decode is reported only by
		// the checkpoints that hold it.
		ds := make([]decoded, len(stored))
		parallel(len(stored), func(i int) {
			ds[i].m, ds[i].err = DecodeMessage(stored[i].Data)
		})
		for i, r := range stored {
			b.decoded[[2]int{r.Generation, r.Index}] = ds[i]
		}
		b.rows = lineage.New(len(stored), func(i int) (int, int) { // the rows' indexes, without their data
			return stored[i].Generation, stored[i].Index
		})
	}
	id, first, last, known := h.ID, h.First, h.Last, h.Known
	used := false
	return func(yield func(*Checkpoint, error) bool) {
		if used {
			return
		}
		used = true
		if !known && len(heads) == 0 {
			if first <= last {
				yield(nil, &NotFoundError{ID: id})
			}
			return
		}
		if first > last {
			return
		}
		next := 0
		for step := first; ; step++ {
			for next < len(heads) && heads[next].step < step {
				next++
			}
			var (
				cp  *Checkpoint
				err error
			)
			switch {
			case next < len(heads) && heads[next].step == step:
				f := &heads[next]
				cp, err = b.load(f.seq, f.head, f.err)
				f.head = nil // yielded: the caller's
			case known:
				err = &NotFoundError{ID: id, Step: step, AtStep: true}
			default:
				err = &NotFoundError{ID: id}
			}
			if !yield(cp, err) || step == last {
				return
			}
		}
	}, nil
}

// parallel calls f(i) for each i from 0 to n-1, on up to GOMAXPROCS
// goroutines.
func parallel(n int, f func(i int)) {
	const chunk = 32
	workers := min(runtime.GOMAXPROCS(0), (n+chunk-1)/chunk)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for {
				start := int(next.Add(chunk)) - chunk
				if start >= n {
					return
				}
				for i := start; i < min(start+chunk, n); i++ {
					f(i)
				}
			}
		})
	}
	wg.Wait()
}

// batch holds the message rows read for LoadSteps, decoded: their indexes
// in rows, the messages in decoded.
type batch struct {
	id   string
	rows *lineage.Rows
	// need is, by lineage (root, generation), the largest message count of
	// its heads.
	need     map[[2]int]int
	lineages map[[2]int]*resolved
	decoded  map[[2]int]decoded // by (generation, index)
	retired  map[int][]Row      // chunks of retired call ids by root, in order
}

// resolved is the transcript of the largest checkpoint of a lineage, as
// its stored rows: rows[i], of generation gens[i], is the row of index i
// with the highest generation of the lineage, from 0 up to the first
// missing index or the largest count of its heads; after is the smallest
// index stored past a missing one (-1 if none), and negative reports a row
// of a negative index. msgs are the decoded rows[:len(msgs)], and bad, if
// not -1, the first row that does not decode, with badErr.
type resolved struct {
	rows     []Row
	gens     []int
	after    int
	negative bool
	msgs     []defs.Message
	bad      int
	badErr   error
}

type decoded struct {
	m   defs.Message
	err error
}

// load returns the checkpoint of head h filed under seq, or err, the error
// decoding it.
func (b *batch) load(seq int64, h *Head, err error) (*Checkpoint, error) {
	if err != nil {
		return nil, err
	}
	if h.RetiredStored > 0 {
		if h.Checkpoint.RetiredCallIDs, err = joinRetired(b.retired[h.Root], h.RetiredStored); err != nil {
			return nil, &CorruptError{ID: b.id, Seq: seq, Err: err}
		}
	}
	l := b.lineage(h.Root, h.Checkpoint.Generation)
	// The rows that Load's rows function returns for h, as far as they
	// matter to it: those below the first missing index, then the one past
	// it, if any.
	var rs []Row
	switch n := h.Messages; {
	case n > 0 && l.negative:
		rs = []Row{{Index: -1}}
	case n <= len(l.rows):
		rs = l.rows[:n]
	case l.after >= 0 && l.after < n:
		rs = append(l.rows[:len(l.rows):len(l.rows)], Row{Index: l.after})
	default:
		rs = l.rows
	}
	return h.load(b.id, seq, rs, func(rs []Row) ([]defs.Message, int, error) {
		n := len(rs)
		for len(l.msgs) < n && l.bad < 0 {
			i := len(l.msgs)
			d := b.decoded[[2]int{l.gens[i], i}] // decoded by LoadSteps
			if d.err != nil {
				l.bad, l.badErr = i, d.err
				break
			}
			l.msgs = append(l.msgs, d.m)
		}
		if l.bad >= 0 && l.bad < n {
			return nil, l.bad, l.badErr
		}
		if n == 0 {
			return []defs.Message{}, 0, nil // as Load returns it
		}
		return l.msgs[:n:n], 0, nil
	})
}

// lineage returns the rows of lineage (root, gen) up to the largest count
// of its heads: each index from the highest generation in [root, gen] that
// stores it.
func (b *batch) lineage(root, gen int) *resolved {
	key := [2]int{root, gen}
	if l := b.lineages[key]; l != nil {
		return l
	}
	r := b.rows.Resolve(root, gen, b.need[key])
	l := &resolved{rows: make([]Row, len(r.Gens)), gens: r.Gens, after: r.After, negative: r.Negative, bad: -1}
	for i := range l.rows {
		l.rows[i].Index = i // the rows hold only their index
	}
	l.msgs = make([]defs.Message, 0, len(l.rows))
	b.lineages[key] = l
	return l
}
