package callsite

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStackCacheKeepsKeysThatShareAHash checks that two keys under one hash
// are both kept and told apart, whichever is looked up, and that storing a
// key again returns the Stack stored first.
func TestStackCacheKeepsKeysThatShareAHash(t *testing.T) {
	const h = 0x5eed // not a hash any real key has in this test binary, as checked below
	a := stackKey{pcs: [8]uintptr{1, 2, 3}, physical: true}
	b := stackKey{pcs: [8]uintptr{1, 2, 3}} // differs from a only by physical
	c := stackKey{pcs: [8]uintptr{1, 2, 4}, physical: true}
	require.NotEqual(t, uint64(h), a.hash())
	_, ok := cachedStack(h, &a)
	require.False(t, ok, "hash already in use")

	assert.Equal(t, Stack{id: "a"}, cacheStack(h, &a, Stack{id: "a"}))
	assert.Equal(t, Stack{id: "b"}, cacheStack(h, &b, Stack{id: "b"}))
	assert.Equal(t, Stack{id: "a"}, cacheStack(h, &a, Stack{id: "a again"}), "a second store of a key keeps the first Stack")
	for k, want := range map[*stackKey]string{&a: "a", &b: "b"} {
		got, ok := cachedStack(h, k)
		assert.True(t, ok)
		assert.Equal(t, Stack{id: want}, got)
	}
	_, ok = cachedStack(h, &c)
	assert.False(t, ok, "a key never stored is found")
}

// TestStackKeyHashUsesEveryWord checks that changing any one word of a key,
// or its physical flag, changes its hash.
func TestStackKeyHashUsesEveryWord(t *testing.T) {
	base := stackKey{pcs: [8]uintptr{0x401000, 0x402000, 0x403000, 0x404000, 0x405000, 0x406000, 0x407000, 0x408000}}
	seen := map[uint64]string{base.hash(): "base"}
	for i := range base.pcs {
		k := base
		k.pcs[i] += 8
		_, dup := seen[k.hash()]
		assert.False(t, dup, "word %d", i)
		seen[k.hash()] = "word"
	}
	k := base
	k.physical = true
	_, dup := seen[k.hash()]
	assert.False(t, dup, "physical")
}

//go:noinline
func framesHere() Frames { return CallerFrames(0) }

//go:noinline
func framesVia() Frames { return framesHere() }

// TestCallerFramesCompareByPlace checks that Frames read from one place
// are equal, that Frames read from another differ, and that Stack names
// them as CallerStack does.
func TestCallerFramesCompareByPlace(t *testing.T) {
	var fs [3]Frames
	for i := range fs {
		fs[i] = framesVia()
	}
	assert.Equal(t, fs[0], fs[1])
	assert.Equal(t, fs[0], fs[2])
	other := framesHere()
	assert.NotEqual(t, fs[0], other, "frames read through another caller")
	st := fs[0].Stack(nil)
	assert.Contains(t, st.String(), "cache_test.go")
	assert.Equal(t, st, fs[2].Stack(nil), "named twice")
	assert.NotEqual(t, st, other.Stack(nil))
}

// TestGIdentifiesGoroutines checks G where the frame walk exists: stable
// on a goroutine across stack growth, different on goroutines alive at
// once; and 0 elsewhere.
func TestGIdentifiesGoroutines(t *testing.T) {
	g := G()
	if !haveWalk {
		assert.Zero(t, g)
		return
	}
	require.NotZero(t, g, "the check at first use turned G off")
	assert.Equal(t, g, growStack(200, G), "after the stack grew")
	const n = 8
	ids := make(chan uintptr, n)
	release := make(chan struct{})
	for range n {
		go func() {
			ids <- G()
			<-release // alive until every id is read
		}()
	}
	seen := map[uintptr]bool{g: true}
	for range n {
		id := <-ids
		assert.False(t, seen[id], "two live goroutines share %#x", id)
		seen[id] = true
	}
	close(release)
}
