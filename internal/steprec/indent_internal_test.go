package steprec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
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

// TestOneLineFast checks that OneLine and writer.oneLine, which skip
// json.Compact for JSON that is compact already, write what Compact (or
// the quoting of what is not JSON) writes, over JSON compact or not,
// spaces in strings or out, HTML characters and line separators (which
// Compact leaves as they are), and text that is not JSON.
func TestOneLineFast(t *testing.T) {
	for _, raw := range []string{
		``, ` `, `null`, `1e5`, `"s"`, `"a b"`, `[1,2]`, `[1, 2]`, `{"a":1}`, `{"a": 1}`, "{\"a\":1}\n", "\t{\"a\":1}",
		`{"a":"x y"}`, `{"a":"<&>"}`, "{\"a\":\"\u2028\u2029\"}", `{"a":"tab\there"}`, `{"a":"é"}`, "\"\xff\"",
		`{"a":1}}`, `{"a":}`, `not json`, `{"a":[{"b":null},true,false,-0.5]}`, `{ }`, `{}`, `"\u0041"`, `"unterminated`,
	} {
		var want string
		var b bytes.Buffer
		if raw == "" || json.Compact(&b, []byte(raw)) != nil {
			want = strconv.Quote(raw)
		} else {
			want = b.String()
		}
		assert.Equal(t, want, OneLine([]byte(raw)), "OneLine(%q)", raw)
		w := newWriter(nil, "")
		w.b.WriteString("x")
		w.oneLine(raw)
		assert.Equal(t, "x"+want, w.b.String(), "writer.oneLine(%q)", raw)
		w.free()
	}
}
