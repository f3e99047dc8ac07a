package prompt_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/prompt"
)

// Declaring, at every execution, a message that was added already costs
// nothing once its call site is known.
func TestDeclaredMessageAgainAllocatesNothing(t *testing.T) {
	p := prompt.New("")
	fn := func(p *prompt.Prompt) error {
		p.User("Count.")
		return nil
	}
	added, err := p.Execute(0, fn)
	require.NoError(t, err)
	require.Len(t, added, 1)
	step := 1
	allocs := testing.AllocsPerRun(100, func() {
		added, err := p.Execute(step, fn)
		require.NoError(t, err, "Execute")
		// The length, not the slice, goes into the interface: a small int
		// does not allocate.
		require.Zero(t, len(added), "messages added by Execute")
		step++
	})
	assert.Equal(t, 0.0, allocs)
}

// The identities of the messages seen are listed again only when a message
// was added: a list handed out is never changed.
func TestSeenMessagesListedOncePerChange(t *testing.T) {
	p := prompt.New("")
	step := 0
	more := false
	fn := func(p *prompt.Prompt) error {
		p.User("Count.")
		if more {
			p.User("More.", prompt.MessageKey("more"))
		}
		return nil
	}
	exec := func() {
		_, err := p.Execute(step, fn)
		require.NoError(t, err)
		step++
	}
	exec()
	first := p.SeenMessages()
	kept := append([]string(nil), first...)
	exec()
	again := p.SeenMessages()
	assert.Equal(t, kept, again)
	assert.Zero(t, testing.AllocsPerRun(10, func() { _ = p.SeenMessages() }))
	more = true
	exec()
	later := p.SeenMessages()
	assert.Len(t, later, len(kept)+2, "by key and by role and text")
	assert.Contains(t, later, "key:more")
	assert.Equal(t, kept, first, "the first list is unchanged")
	p.MarkMessagesSeen([]string{"user\x00restored"})
	assert.Contains(t, p.SeenMessages(), "user\x00restored")
	assert.Equal(t, kept, first)
}
