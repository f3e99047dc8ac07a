package prompt

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/reprompt/reprompt/defs"
)

// givenSchemas caches the schemas given to DefSchemaTool, resolved, by
// their bytes: a prompt re-declares its tools at every step.
var givenSchemas sync.Map // string → *toolSchema

func resolveGiven(raw json.RawMessage) *toolSchema {
	if v, ok := givenSchemas.Load(string(raw)); ok {
		return v.(*toolSchema)
	}
	ts := &toolSchema{Raw: raw}
	var s jsonschema.Schema
	switch err := json.Unmarshal(raw, &s); {
	case err != nil:
		ts.Err = fmt.Errorf("the JSON Schema of the arguments is not valid: %w", err)
	case s.Type != "object":
		ts.Err = fmt.Errorf("the JSON Schema of the arguments must have type \"object\", not %q", s.Type)
	default:
		if ts.Resolved, err = s.Resolve(nil); err != nil {
			ts.Err = fmt.Errorf("the JSON Schema of the arguments cannot be used: %w", err)
		}
	}
	v, _ := givenSchemas.LoadOrStore(string(raw), ts)
	return v.(*toolSchema)
}

// DefSchemaTool declares a tool whose arguments are described by a JSON
// Schema given as is, rather than generated from a Go type as DefTool does:
// a tool of an MCP server, or of an API description. The schema (an object
// schema, draft 2020-12 or draft-07) is sent to the model unchanged, and the
// arguments are validated against it before fn runs; fn gets them as the
// model sent them. Invalid arguments, a returned error and a panic become
// error results for the model, as for DefTool.
//
// It panics with a *MisuseError (a run error naming the call site) when the
// schema is not valid JSON, not of type object, or cannot be resolved.
func (p *Prompt) DefSchemaTool(name, description string, schema json.RawMessage, fn func(ctx context.Context, args json.RawMessage) (string, error), opts ...ToolOption) defs.Handle {
	p.check("DefSchemaTool")
	e := p.checkTool("DefSchemaTool", name)
	ts := resolveGiven(schema)
	if ts.Err != nil {
		misuse("DefSchemaTool "+name, ts.Err, 1)
	}
	o, id := toolOpts(opts), funcID(fn)
	if t := same(&e.Last, description, ts, o, id); t != nil {
		return p.c().Registry().Declare(defs.Def{Kind: defs.KindTool, Name: name, Tool: t})
	}
	return p.declareTool(e, name, description, ts, nil, o, id, func(ctx context.Context, raw json.RawMessage) (string, error) {
		return fn(ctx, orEmpty(raw))
	})
}
