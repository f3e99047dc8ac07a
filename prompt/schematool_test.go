package prompt_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/prompt"
)

// draft07 is a schema as MCP servers written with zod send it.
const draft07 = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",` +
	`"properties":{"path":{"type":"string","description":"the file"},"head":{"type":"number"}},` +
	`"required":["path"],"additionalProperties":false}`

func TestDefSchemaTool(t *testing.T) {
	var got json.RawMessage
	tool := declare(t, func(p *prompt.Prompt) error {
		p.DefSchemaTool("read_file", "Read a file.", json.RawMessage(draft07), func(ctx context.Context, args json.RawMessage) (string, error) {
			got = args
			return "contents", nil
		}, prompt.Idempotent())
		return nil
	}, "read_file")
	assert.JSONEq(t, draft07, string(tool.Schema), "the schema is sent as given")
	assert.True(t, tool.Idempotent)

	require.NoError(t, tool.Validate(json.RawMessage(`{"path":"a.txt","head":3}`)))
	for args, want := range map[string]string{
		`{"head":3}`:             "path",
		`{"path":1}`:             "path",
		`{"path":"a","extra":1}`: "extra",
		`{"path":`:               "not valid JSON",
	} {
		err := tool.Validate(json.RawMessage(args))
		var ae *prompt.ArgumentsError
		require.ErrorAs(t, err, &ae, "arguments %s", args)
		assert.Equal(t, "read_file", ae.Tool)
		// The text is what the model reads to fix its call (the schema
		// library's errors are untyped): it must name the property.
		assert.ErrorContains(t, ae.Err, want, "arguments %s", args)
	}

	out, err := tool.Call(context.Background(), json.RawMessage(`{"path":"a.txt"}`))
	require.NoError(t, err)
	assert.Equal(t, "contents", out)
	assert.JSONEq(t, `{"path":"a.txt"}`, string(got))
	_, err = tool.Call(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, `{}`, string(got), "no arguments are passed as {}")
}

func TestDefSchemaToolBadSchemaIsMisuse(t *testing.T) {
	for name, schema := range map[string]string{
		"not JSON":   `{"type":`,
		"not object": `{"type":"array","items":{"type":"string"}}`,
		"bad ref":    `{"type":"object","properties":{"a":{"$ref":"#/nowhere"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			var site string
			_, err := prompt.New("").Execute(0, func(p *prompt.Prompt) error {
				site = next()
				p.DefSchemaTool("t", "d", json.RawMessage(schema), func(context.Context, json.RawMessage) (string, error) { return "", nil })
				return nil
			})
			var me *prompt.MisuseError
			require.True(t, errors.As(err, &me), "err = %v, want a *prompt.MisuseError", err)
			assert.Equal(t, "DefSchemaTool t", me.Hook)
			assert.Contains(t, me.Site, site)
			// The schema errors are untyped: what is wrong is only in the text.
			assert.ErrorContains(t, me.Err, "JSON Schema")
		})
	}
}
