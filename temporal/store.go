package temporal

import (
	"context"
	"slices"

	"github.com/reprompt/reprompt/session"
)

// latest is the session.Store of a workflow: it keeps the latest
// checkpoint only, in memory, which is what continue-as-new carries. It
// reads no clock, so that it is deterministic in workflow code.
type latest struct {
	cp *session.Checkpoint
}

var _ session.Store = (*latest)(nil)

func (s *latest) Save(_ context.Context, cp *session.Checkpoint) error {
	var seq int64
	if s.cp != nil {
		if cp.SessionID != s.cp.SessionID {
			return &session.InvalidError{ID: cp.SessionID, Reason: "the workflow's store holds session " + s.cp.SessionID}
		}
		seq = s.cp.Seq
	}
	if cp.Seq != seq {
		return &session.ConflictError{ID: cp.SessionID, Seq: cp.Seq, Latest: seq}
	}
	c := *cp
	c.Seq = seq + 1
	c.Base = 0
	c.Transcript = slices.Clip(cp.Transcript)
	s.cp = &c
	cp.Seq = c.Seq
	return nil
}

func (s *latest) Latest(_ context.Context, id string) (*session.Checkpoint, error) {
	if s.cp == nil || s.cp.SessionID != id {
		return nil, &session.NotFoundError{ID: id}
	}
	c := *s.cp
	return &c, nil
}

func (s *latest) AtStep(_ context.Context, id string, step int) (*session.Checkpoint, error) {
	if s.cp == nil || s.cp.SessionID != id || s.cp.Step != step {
		return nil, &session.NotFoundError{ID: id}
	}
	return s.Latest(context.Background(), id)
}

func (s *latest) List(ctx context.Context) ([]session.Info, error) {
	if s.cp == nil {
		return nil, nil
	}
	info, err := s.Stat(ctx, s.cp.SessionID)
	return []session.Info{info}, err
}

func (s *latest) Stat(_ context.Context, id string) (session.Info, error) {
	if s.cp == nil || s.cp.SessionID != id {
		return session.Info{}, &session.NotFoundError{ID: id}
	}
	return session.Info{ID: id, Seq: s.cp.Seq, Step: s.cp.Step, Generation: s.cp.Generation, Done: s.cp.Done}, nil
}

func (s *latest) Delete(_ context.Context, id string) error {
	if s.cp != nil && s.cp.SessionID == id {
		s.cp = nil
	}
	return nil
}
