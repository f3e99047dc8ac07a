package prompt_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/prompt"
)

// executeAll runs fn for steps 0..n-1 on p and returns what each added.
func executeAll(t *testing.T, p *prompt.Prompt, n int, fn prompt.Func) [][]defs.Message {
	t.Helper()
	var got [][]defs.Message
	for step := range n {
		added, err := p.Execute(step, fn)
		require.NoError(t, err, "step %d", step)
		got = append(got, slices.Clone(added))
	}
	return got
}

// Issue 8 item 12: a message whose text comes from state is added once,
// not again every time the state changes.
func TestMessageFromStateIsAddedOnce(t *testing.T) {
	p := prompt.New("")
	got := executeAll(t, p, 3, func(p *prompt.Prompt) error {
		count, setCount := prompt.State(p, "count", 0)
		p.User(fmt.Sprintf("Count: %d", count))
		setCount.Set(p.Context(), count+1)
		return nil
	})
	want := [][]defs.Message{{defs.UserMessage("Count: 0")}, {}, {}}
	assert.Empty(t, cmp.Diff(want, got), "added messages mismatch (-want +got)")
}

// A loop declares one message per item, each once; items appended later
// are added when they first appear.
func TestMessagesDeclaredInALoop(t *testing.T) {
	p := prompt.New("")
	lists := [][]string{{"a", "b", "a"}, {"a", "b", "a"}, {"a", "b", "a", "c"}}
	var got [][]defs.Message
	for step, items := range lists {
		added, err := p.Execute(step, func(p *prompt.Prompt) error {
			for _, it := range items {
				p.User(it)
			}
			return nil
		})
		require.NoError(t, err)
		got = append(got, slices.Clone(added))
	}
	want := [][]defs.Message{
		{defs.UserMessage("a"), defs.UserMessage("b"), defs.UserMessage("a")},
		{},
		{defs.UserMessage("c")},
	}
	assert.Empty(t, cmp.Diff(want, got), "added messages mismatch (-want +got)")
}

// MessageKey identifies a message wherever it is declared.
func TestMessageKey(t *testing.T) {
	p := prompt.New("")
	got := executeAll(t, p, 3, func(p *prompt.Prompt) error {
		if p.Step()%2 == 0 {
			p.User("from here", prompt.MessageKey("task"))
		} else {
			p.DefMessage(defs.RoleUser, "from there", prompt.MessageKey("task"))
		}
		return nil
	})
	want := [][]defs.Message{{defs.UserMessage("from here")}, {}, {}}
	assert.Empty(t, cmp.Diff(want, got), "added messages mismatch (-want +got)")
}

// Checkpoints written before call-site identities hold role+text ids:
// a prompt restored from one does not add those messages again, but adds
// the ones the checkpoint does not hold.
func TestLegacyMessageIDsAreHonoured(t *testing.T) {
	p := prompt.New("")
	p.MarkMessagesSeen([]string{
		prompt.MessageID(defs.RoleSystem, "be brief"),
		prompt.MessageID(defs.RoleUser, "Count: 0"),
	})
	got := executeAll(t, p, 2, func(p *prompt.Prompt) error {
		p.DefMessage(defs.RoleSystem, "be brief")
		p.User(fmt.Sprintf("Count: %d", p.Step()))
		p.User("new")
		return nil
	})
	want := [][]defs.Message{{defs.UserMessage("new")}, {}}
	assert.Empty(t, cmp.Diff(want, got), "added messages mismatch (-want +got)")
	// What it saves names the messages by site as well as by text.
	seen := p.SeenMessages()
	assert.Contains(t, seen, prompt.MessageID(defs.RoleUser, "new"))
	assert.Contains(t, seen, prompt.MessageID(defs.RoleUser, "Count: 0"))
	assert.True(t, slices.IsSorted(seen))
	assert.Greater(t, len(seen), 3)
}

// A checkpoint's identities survive a change of the prompt's code (other
// call sites): the messages are matched by role and text then.
func TestSeenMessagesSurviveMovedCode(t *testing.T) {
	before := prompt.New("")
	executeAll(t, before, 1, func(p *prompt.Prompt) error {
		p.User("hello")
		return nil
	})
	after := prompt.New("")
	after.MarkMessagesSeen(before.SeenMessages())
	got := executeAll(t, after, 2, func(p *prompt.Prompt) error {
		p.DefSystem("role", "moved the line below")
		p.User("hello")
		return nil
	})
	assert.Empty(t, cmp.Diff([][]defs.Message{{}, {}}, got, cmpopts.EquateEmpty()), "added messages mismatch (-want +got)")
}

// Forget undoes what the last execution added, so the next one adds it.
func TestForgetMessages(t *testing.T) {
	p := prompt.New("")
	fn := func(p *prompt.Prompt) error {
		p.User("hello")
		return nil
	}
	added, err := p.Execute(0, fn)
	require.NoError(t, err)
	p.Forget(added)
	added, err = p.Execute(1, fn)
	require.NoError(t, err)
	assert.Equal(t, []defs.Message{defs.UserMessage("hello")}, added)
}
