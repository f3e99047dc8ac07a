package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/session"
)

// Post implements session.Inbox. It is one IMMEDIATE transaction: posts
// and saves to the file are serialized, so each post is numbered one more
// than the last committed one.
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
	conn, done, err := s.begin(ctx)
	if err != nil {
		return 0, err
	}
	committed := false
	defer func() {
		if !committed {
			_ = done(false)
		}
	}()
	var seq int64
	err = conn.QueryRowContext(ctx, `SELECT (SELECT coalesce(max(seq), 0) + 1 FROM posts WHERE session = ?1)
		FROM sessions WHERE id = ?1`, id).Scan(&seq)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, &session.NotFoundError{ID: id}
	case err != nil:
		return 0, fmt.Errorf("session/sqlite: post to %q: %w", id, err)
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO posts (session, seq, data) VALUES (?, ?, ?)`, id, seq, data); err != nil {
		return 0, fmt.Errorf("session/sqlite: post to %q: %w", id, err)
	}
	committed = true
	if err := done(true); err != nil {
		return 0, err
	}
	return seq, nil
}

// Posted implements session.Inbox, with one query.
func (s *Store) Posted(ctx context.Context, id string, after int64) ([]session.Post, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT seq, data FROM posts WHERE session = ? AND seq > ? ORDER BY seq`, id, after)
	if err != nil {
		return nil, fmt.Errorf("session/sqlite: posts of %q: %w", id, err)
	}
	defer rows.Close()
	var out []session.Post
	for rows.Next() {
		var (
			seq  int64
			data []byte
		)
		if err := rows.Scan(&seq, &data); err != nil {
			return nil, fmt.Errorf("session/sqlite: posts of %q: %w", id, err)
		}
		p, err := session.DecodePost(id, seq, data)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("session/sqlite: posts of %q: %w", id, err)
	}
	return out, nil
}
