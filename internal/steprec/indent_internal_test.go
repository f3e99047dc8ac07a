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
// json.Compact for JSON that is compact already or that they found
// compact before, write what Compact (or the quoting of what is not JSON)
// writes, over JSON compact or not, spaces in strings or out, HTML
// characters and line separators (which Compact leaves as they are), and
// text that is not JSON, each twice in one writer, between others.
func TestOneLineFast(t *testing.T) {
	raws := []string{
		``, ` `, `null`, `1e5`, `"s"`, `"a b"`, `[1,2]`, `[1, 2]`, `{"a":1}`, `{"a": 1}`, "{\"a\":1}\n", "\t{\"a\":1}",
		`{"a":"x y"}`, `{"a":"<&>"}`, "{\"a\":\"\u2028\u2029\"}", `{"a":"tab\there"}`, `{"a":"é"}`, "\"\xff\"",
		`{"a":1}}`, `{"a":}`, `not json`, `{"a":[{"b":null},true,false,-0.5]}`, `{ }`, `{}`, `"\u0041"`, `"unterminated`,
	}
	w := newWriter(nil, "")
	defer w.free()
	var want strings.Builder
	for i := range 2 * len(raws) {
		raw := raws[i%len(raws)]
		var b bytes.Buffer
		var one string
		if raw == "" || json.Compact(&b, []byte(raw)) != nil {
			one = strconv.Quote(raw)
		} else {
			one = b.String()
		}
		assert.Equal(t, one, OneLine([]byte(raw)), "OneLine(%q)", raw)
		w.oneLine(raw)
		w.b.WriteByte(' ')
		w.oneLineBytes([]byte(raw))
		w.b.WriteByte('\n')
		want.WriteString(one + " " + one + "\n")
		assert.Equal(t, want.String(), w.b.String(), "writer.oneLine(%q), time %d", raw, i/len(raws)+1)
	}
}

// TestSchemaText checks that SchemaText returns its argument as a string,
// the same for the same schema, and remembers at most 256 schemas and 1 MB.
func TestSchemaText(t *testing.T) {
	assert.Empty(t, SchemaText(nil), "no schema")
	for i := range 1000 {
		raw := fmt.Sprintf(`{"type":"object","description":%q}`, strings.Repeat("x", i*10))
		assert.Equal(t, raw, SchemaText([]byte(raw)), "schema %d, first", i)
		assert.Equal(t, raw, SchemaText([]byte(raw)), "schema %d, remembered", i)
		schemaTexts.Lock()
		n, b := len(schemaTexts.m), schemaTexts.bytes
		schemaTexts.Unlock()
		assert.LessOrEqual(t, n, 256, "schemas held after %d", i)
		assert.LessOrEqual(t, b, 1<<20, "bytes held after %d", i)
	}
}

// TestStepName checks the names of stepNames against the name made for
// each step, with and without a prefix.
func TestStepName(t *testing.T) {
	for _, prefix := range []string{"", "step 2/agent helper call-1/"} {
		w := newWriter(nil, prefix)
		for _, n := range []int{0, 1, 9, 10, 63, 64, 100, -1} {
			assert.Equal(t, prefix+"step "+strconv.Itoa(n), w.stepName(n), "prefix %q, step %d", prefix, n)
		}
		w.free()
	}
}
