package session_test

import (
	"testing"

	"github.com/reprompt/reprompt/internal/convtest"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/sessiontest"
)

func TestMemoryConformance(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T) session.Store { return session.NewMemory() },
		sessiontest.WithDamage(func(t *testing.T, st session.Store, id string, d sessiontest.Damage) {
			session.DamageMemory(t, st.(*session.Memory), id, d.OnHead(), d.Apply)
		}))
}

// The conversation of internal/convtest on the memory store: turns in
// fresh runners, interrupted turns resumed, two runners racing.
func TestMemoryConversation(t *testing.T) {
	convtest.Run(t, session.NewMemory())
}
