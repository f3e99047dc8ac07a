package lanes_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/lanes"
)

// lane holds messages as strings.
type lane struct {
	msgs    []string
	lastUse uint64
}

func (l *lane) Len() int        { return len(l.msgs) }
func (l *lane) LastUse() uint64 { return l.lastUse }

func pick(ls []*lane, msgs ...string) (*lane, int) {
	return lanes.Pick(ls, len(msgs), func(l *lane, i int) bool { return l.msgs[i] == msgs[i] })
}

// TestPick: the longest prefix wins; on a tie the longer lane, then the
// one used last; no lane holding the first message gives none.
func TestPick(t *testing.T) {
	a := &lane{msgs: []string{"s", "a1", "a2"}, lastUse: 1}
	b := &lane{msgs: []string{"s", "b1"}, lastUse: 2}
	c := &lane{msgs: []string{"s", "a1", "a2", "a3"}, lastUse: 0}
	d := &lane{msgs: []string{"s", "a1", "a2", "a3"}, lastUse: 3}
	tests := []struct {
		name  string
		ls    []*lane
		msgs  []string
		want  *lane
		wantP int
	}{
		{"longest prefix", []*lane{a, b}, []string{"s", "a1", "x"}, a, 2},
		{"whole lane", []*lane{b, a}, []string{"s", "b1", "b2"}, b, 2},
		{"tie: the longer lane", []*lane{a, c}, []string{"s", "a1", "a2"}, c, 3},
		{"tie: the longer lane, in either order", []*lane{c, a}, []string{"s", "a1"}, c, 2},
		{"tie of lengths: the one used last", []*lane{c, d}, []string{"s", "a1"}, d, 2},
		{"none holds the first message", []*lane{a, b}, []string{"x", "a1"}, nil, 0},
		{"no messages", []*lane{a, b}, nil, nil, 0},
		{"no lanes", nil, []string{"s"}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, p := pick(tt.ls, tt.msgs...)
			assert.Same(t, tt.want, got)
			assert.Equal(t, tt.wantP, p)
		})
	}
}

// TestOther: new lanes up to the bound, then the least recently used one
// other than not, emptied.
func TestOther(t *testing.T) {
	var ls []*lane
	for i := range 3 {
		l := lanes.Other(&ls, 3, nil)
		require.Len(t, ls, i+1)
		assert.Same(t, ls[i], l, "a new lane, appended")
		assert.Zero(t, *l)
		l.msgs, l.lastUse = []string{"m"}, uint64(10-i) // ls[2] is the least recently used
	}
	l := lanes.Other(&ls, 3, nil)
	require.Len(t, ls, 3, "no lane past the bound")
	assert.Same(t, ls[2], l, "the least recently used")
	assert.Zero(t, *l, "emptied")

	ls[2].lastUse = 20
	l = lanes.Other(&ls, 3, ls[1])
	assert.Same(t, ls[0], l, "the least recently used but not")
	assert.Zero(t, *l)
	assert.Equal(t, []string{"m"}, ls[1].msgs, "not is left alone")
}

// TestDiverged: no message reused after the shared prefix, and more of
// them in the lane than in the prefix: another conversation.
func TestDiverged(t *testing.T) {
	assert.True(t, lanes.Diverged(10, 2, 0), "opens alike, then nothing in common")
	assert.False(t, lanes.Diverged(10, 2, 1), "a message after the change kept: a rewrite")
	assert.False(t, lanes.Diverged(10, 5, 0), "only the end changed: a rewrite")
	assert.False(t, lanes.Diverged(3, 2, 0))
}

// TestKeyOf: role, content length, and the tool call's id (the first
// tool call's for an assistant message).
func TestKeyOf(t *testing.T) {
	assert.Equal(t, lanes.Key{Role: defs.RoleUser, N: 5}, lanes.KeyOf(&defs.Message{Role: defs.RoleUser, Content: "hello"}))
	assert.Equal(t, lanes.Key{Role: defs.RoleTool, N: 2, ID: "c1"}, lanes.KeyOf(&defs.Message{Role: defs.RoleTool, Content: "ok", ToolCallID: "c1"}))
	assert.Equal(t, lanes.Key{Role: defs.RoleAssistant, ID: "c1"}, lanes.KeyOf(&defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "c1"}, {ID: "c2"}}}))
}
