package steprec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestIndentedBounded checks that the remembered schemas stay within 256
// and 1 MB, and that a schema is indented the same remembered or not.
func TestIndentedBounded(t *testing.T) {
	for i := range 1000 {
		raw := fmt.Sprintf(`{"type":"object","description":%q}`, strings.Repeat("x", i*10))
		want := indentJSONOnce(raw)
		assert.Equal(t, want, indentJSON(raw), "schema %d, first", i)
		assert.Equal(t, want, indentJSON(raw), "schema %d, remembered", i)
		indented.Lock()
		n, b := len(indented.m), indented.bytes
		indented.Unlock()
		assert.LessOrEqual(t, n, 256, "schemas held after %d", i)
		assert.LessOrEqual(t, b, 1<<20, "bytes held after %d", i)
	}
	huge := fmt.Sprintf(`{"description":%q}`, strings.Repeat("y", 100<<10))
	assert.Equal(t, indentJSONOnce(huge), indentJSON(huge), "a schema too large to hold")
	indented.Lock()
	_, held := indented.m[huge]
	indented.Unlock()
	assert.False(t, held, "a schema over 64 kB is not held")
}
