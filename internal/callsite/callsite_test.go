package callsite

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func here() uintptr { return CallerPC(1) }

func TestCallerPCNamesTheCallSite(t *testing.T) {
	pc1, pc2 := here(), here()
	require.NotZero(t, pc1)
	assert.NotEqual(t, pc1, pc2, "two call sites, two program counters")
	var loop []uintptr
	for range 3 {
		loop = append(loop, here()) // one site, at every pass
	}
	assert.Equal(t, []uintptr{loop[0], loop[0], loop[0]}, loop)
	s := FromPC(pc1)
	assert.True(t, strings.HasSuffix(s.File, "callsite_test.go"), s.File)
	assert.Equal(t, "callsite_test.go:"+itoa(s.Line), Name(pc1))
	assert.Equal(t, "unknown", Name(0))
	assert.Equal(t, "unknown", Site{}.String())
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

func TestPanicNamesTheSiteThatPanicked(t *testing.T) {
	var got Site
	func() {
		defer func() {
			recover()
			got = Panic()
		}()
		panic("boom") // here
	}()
	assert.True(t, strings.HasSuffix(got.File, "callsite_test.go"), got.File)
	assert.Contains(t, got.Func, "TestPanicNamesTheSiteThatPanicked")
}
