package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"

	"github.com/reprompt/reprompt/session"
)

var _ session.StepReader = (*Store)(nil)

// AtSteps implements session.StepReader: in one read transaction, one
// query selects the head of each step as AtStep does, and one reads the
// message rows of the generations they need, each once.
func (s *Store) AtSteps(ctx context.Context, id string, first, last int) iter.Seq2[*session.Checkpoint, error] {
	return session.ReadSteps(ctx, first, last, func() (iter.Seq2[*session.Checkpoint, error], error) {
		return s.atSteps(ctx, id, first, last)
	})
}

func (s *Store) atSteps(ctx context.Context, id string, first, last int) (iter.Seq2[*session.Checkpoint, error], error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("session/sqlite: %w", err)
	}
	defer tx.Rollback()
	h := &session.StepHeads{ID: id, First: first, Last: last}
	var one int
	switch err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, id).Scan(&one); {
	case err == nil:
		h.Known = true
	case !errors.Is(err, sql.ErrNoRows):
		return nil, fmt.Errorf("session/sqlite: load session %q: %w", id, err)
	}
	// Each step's head as AtStep picks it: the last without pending, else
	// the last. Only the chosen rows' heads are read.
	rows, err := tx.QueryContext(ctx, `SELECT c.step, c.seq, c.head FROM checkpoints c
		WHERE c.session = ?1 AND c.step BETWEEN ?2 AND ?3
		AND c.seq = (SELECT d.seq FROM checkpoints d WHERE d.session = ?1 AND d.step = c.step ORDER BY d.pending, d.seq DESC LIMIT 1)
		ORDER BY c.step`, id, first, last)
	if err != nil {
		return nil, fmt.Errorf("session/sqlite: load session %q: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var sh session.StepHead
		if err := rows.Scan(&sh.Step, &sh.Seq, &sh.Head); err != nil {
			return nil, fmt.Errorf("session/sqlite: load session %q: %w", id, err)
		}
		h.Heads = append(h.Heads, sh)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("session/sqlite: load session %q: %w", id, err)
	}
	retired, err := tx.QueryContext(ctx, `SELECT root, first, data FROM retired WHERE session = ?`, id)
	if err != nil {
		return nil, fmt.Errorf("session/sqlite: load retired call ids of %q: %w", id, err)
	}
	defer retired.Close()
	for retired.Next() {
		var r session.GenerationRow
		if err := retired.Scan(&r.Generation, &r.Index, &r.Data); err != nil {
			return nil, fmt.Errorf("session/sqlite: load retired call ids of %q: %w", id, err)
		}
		h.Retired = append(h.Retired, r)
	}
	if err := retired.Err(); err != nil {
		return nil, fmt.Errorf("session/sqlite: load retired call ids of %q: %w", id, err)
	}
	return session.LoadSteps(h, func(root, gen, n int) ([]session.GenerationRow, error) {
		rows, err := tx.QueryContext(ctx, `SELECT generation, idx, data FROM messages
			WHERE session = ? AND generation BETWEEN ? AND ? AND idx < ?`, id, root, gen, n)
		if err != nil {
			return nil, fmt.Errorf("session/sqlite: load messages of %q: %w", id, err)
		}
		defer rows.Close()
		var out []session.GenerationRow
		for rows.Next() {
			var r session.GenerationRow
			if err := rows.Scan(&r.Generation, &r.Index, &r.Data); err != nil {
				return nil, fmt.Errorf("session/sqlite: load messages of %q: %w", id, err)
			}
			out = append(out, r)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("session/sqlite: load messages of %q: %w", id, err)
		}
		return out, nil
	})
}
