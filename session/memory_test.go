package session_test

import (
	"testing"

	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/sessiontest"
)

func TestMemoryConformance(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T) session.Store { return session.NewMemory() },
		sessiontest.WithDamage(func(t *testing.T, st session.Store, id string, d sessiontest.Damage) {
			session.DamageMemory(t, st.(*session.Memory), id, d.OnHead(), d.Apply)
		}))
}
