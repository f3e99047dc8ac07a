package postgres

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/jackc/pgx/v5"

	"github.com/reprompt/reprompt/session"
)

var _ session.StepReader = (*Store)(nil)

// AtSteps implements session.StepReader: in one REPEATABLE READ
// transaction, one query selects the head of each step as AtStep does, and
// one reads the message rows of the generations they need, each once.
func (s *Store) AtSteps(ctx context.Context, id string, first, last int) iter.Seq2[*session.Checkpoint, error] {
	return session.ReadSteps(ctx, first, last, func() (iter.Seq2[*session.Checkpoint, error], error) {
		return s.atSteps(ctx, id, first, last)
	})
}

func (s *Store) atSteps(ctx context.Context, id string, first, last int) (iter.Seq2[*session.Checkpoint, error], error) {
	var steps iter.Seq2[*session.Checkpoint, error]
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		h := &session.StepHeads{ID: id, First: first, Last: last}
		var one int
		switch err := tx.QueryRow(ctx, `SELECT 1 FROM reprompt_sessions WHERE id = $1 AND seq > 0`, id).Scan(&one); {
		case err == nil:
			h.Known = true
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("session/postgres: load session %q: %w", id, err)
		}
		// Each step's head as AtStep picks it: the last without pending,
		// else the last. The seqs first, from the index alone, then only
		// their heads, by primary key: a plan that does not depend on the
		// tables' statistics.
		rows, err := tx.Query(ctx, `SELECT DISTINCT ON (step) seq FROM reprompt_checkpoints
			WHERE session = $1 AND step BETWEEN $2 AND $3
			ORDER BY step, pending, seq DESC`, id, first, last)
		if err != nil {
			return fmt.Errorf("session/postgres: load session %q: %w", id, err)
		}
		seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return fmt.Errorf("session/postgres: load session %q: %w", id, err)
		}
		rows, err = tx.Query(ctx, `SELECT step, seq, head FROM reprompt_checkpoints
			WHERE session = $1 AND seq = ANY($2) ORDER BY step`, id, seqs)
		if err != nil {
			return fmt.Errorf("session/postgres: load session %q: %w", id, err)
		}
		var sh session.StepHead
		_, err = pgx.ForEachRow(rows, []any{&sh.Step, &sh.Seq, &sh.Head}, func() error {
			h.Heads = append(h.Heads, sh)
			sh.Head = nil
			return nil
		})
		if err != nil {
			return fmt.Errorf("session/postgres: load session %q: %w", id, err)
		}
		rows, err = tx.Query(ctx, `SELECT root, first, data FROM reprompt_retired WHERE session = $1`, id)
		if err != nil {
			return fmt.Errorf("session/postgres: load retired call ids of %q: %w", id, err)
		}
		var rr session.GenerationRow
		_, err = pgx.ForEachRow(rows, []any{&rr.Generation, &rr.Index, &rr.Data}, func() error {
			h.Retired = append(h.Retired, rr)
			rr.Data = nil
			return nil
		})
		if err != nil {
			return fmt.Errorf("session/postgres: load retired call ids of %q: %w", id, err)
		}
		steps, err = session.LoadSteps(h, func(root, gen, n int) ([]session.GenerationRow, error) {
			rows, err := tx.Query(ctx, `SELECT generation, idx, data FROM reprompt_messages
				WHERE session = $1 AND generation BETWEEN $2 AND $3 AND idx < $4`, id, root, gen, n)
			if err != nil {
				return nil, fmt.Errorf("session/postgres: load messages of %q: %w", id, err)
			}
			var out []session.GenerationRow
			var r session.GenerationRow
			_, err = pgx.ForEachRow(rows, []any{&r.Generation, &r.Index, &r.Data}, func() error {
				out = append(out, r)
				r.Data = nil
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("session/postgres: load messages of %q: %w", id, err)
			}
			return out, nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return steps, nil
}
