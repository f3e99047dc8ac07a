package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/session"
)

// postLock is the first key of the advisory lock that serializes the posts
// of one session; the second is a hash of the session id (sessions whose
// ids collide only wait for each other).
const postLock = 0x706f7374 // "post"

// Post implements session.Inbox. It is one transaction: under the
// session's advisory lock, it numbers the post one more than the last
// committed one. The session's row is read, not locked, so a post does not
// wait for a running Save.
func (s *Store) Post(ctx context.Context, id string, msg defs.Message) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := session.CheckPost(id, msg); err != nil {
		return 0, err
	}
	data, err := session.EncodeMessage(msg)
	if err != nil {
		return 0, err
	}
	var seq int64
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, int32(postLock), id); err != nil {
			return err
		}
		// Read after the lock: in READ COMMITTED each statement sees the
		// posts committed before it, among them the previous holder's.
		err := tx.QueryRow(ctx, `SELECT coalesce((SELECT max(seq) FROM reprompt_posts WHERE session = $1), 0) + 1
			FROM reprompt_sessions WHERE id = $1 AND seq > 0`, id).Scan(&seq)
		if errors.Is(err, pgx.ErrNoRows) {
			return &session.NotFoundError{ID: id}
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO reprompt_posts (session, seq, data) VALUES ($1, $2, $3)`, id, seq, data)
		return err
	})
	if _, ok := errors.AsType[*session.NotFoundError](err); ok {
		return 0, err
	}
	if err != nil {
		return 0, fmt.Errorf("session/postgres: post to %q: %w", id, err)
	}
	return seq, nil
}

// Posted implements session.Inbox, with one query.
func (s *Store) Posted(ctx context.Context, id string, after int64) ([]session.Post, error) {
	rows, err := s.pool.Query(ctx, `SELECT seq, data FROM reprompt_posts WHERE session = $1 AND seq > $2 ORDER BY seq`, id, after)
	if err != nil {
		return nil, fmt.Errorf("session/postgres: posts of %q: %w", id, err)
	}
	var (
		out  []session.Post
		seq  int64
		data []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&seq, &data}, func() error {
		p, err := session.DecodePost(id, seq, data)
		if err != nil {
			return err
		}
		out = append(out, p)
		return nil
	})
	if _, ok := errors.AsType[*session.CorruptError](err); ok {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("session/postgres: posts of %q: %w", id, err)
	}
	return out, nil
}
