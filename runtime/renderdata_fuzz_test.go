package runtime_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// FuzzDefData checks that any JSON value given to DefData renders without
// a panic or an error, as YAML that parses back to a value of the same
// shape.
func FuzzDefData(f *testing.F) {
	for _, s := range []string{
		`{"user_name":"ada","zip":"01234","tags":["a","b"],"n":1.5}`,
		`[1,"yes",null,true,{"a":{}}]`,
		`{"multi":"line one\nline two","html":"<b>&</b>","empty":""}`,
		`{"z":1,"a":2,"":3,"key: with colon":"- dash"}`,
		`12345678901234567890`,
		`"  spaced  "`,
		`{"nested":[[[]]],"unicode":"«ünï»\u0000"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		var v any
		if json.Unmarshal([]byte(data), &v) != nil {
			return
		}
		if _, ok := v.(string); ok {
			return // a string is rendered as is
		}
		m := snapshots.Script(snapshots.Text("ok"))
		_, err := runtime.Run(context.Background(), m, func(p *prompt.Prompt) error {
			p.DefData("d", v)
			return nil
		}, runtime.Config{})
		require.NoError(t, err, "DefData(%s)", data)
		sys := m.Requests()[0].System
		text, ok := strings.CutPrefix(sys, "<variables>\n<d>")
		require.True(t, ok, "system prompt %q, want it to open the variable", sys)
		text, ok = strings.CutSuffix(text, "</d>\n</variables>")
		require.True(t, ok, "system prompt %q, want it to close the variable", sys)
		var back any
		require.NoError(t, yaml.Unmarshal([]byte(text), &back), "DefData(%s) rendered %q, not YAML", data, text)
		require.Equal(t, shape(v), shape(back), "DefData(%s) rendered %q, which reads back as %v", data, text, back)
	})
}

// shape describes a value's structure: kinds and map keys, not scalars,
// whose types JSON and YAML name differently.
func shape(v any) string {
	var b strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			b.WriteString("{")
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				b.WriteString(k + ":")
				walk(x[k])
				b.WriteString(",")
			}
			b.WriteString("}")
		case []any:
			b.WriteString("[")
			for _, e := range x {
				walk(e)
				b.WriteString(",")
			}
			b.WriteString("]")
		case string:
			b.WriteString("s" + x)
		case nil:
			b.WriteString("null")
		case bool:
			b.WriteString("bool")
		default:
			b.WriteString("n")
		}
	}
	walk(v)
	return b.String()
}
