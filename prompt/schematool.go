package prompt

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

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

// schemaToolFunc is the type of DefSchemaTool's function.
var schemaToolFunc = reflect.TypeFor[func(context.Context, json.RawMessage) (string, error)]()

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
	if fn == nil {
		misuse("DefSchemaTool "+name, errNilFunc, 1)
	}
	ts := resolveGiven(schema)
	if ts.Err != nil {
		misuse("DefSchemaTool "+name, ts.Err, 1)
	}
	o := toolOpts(opts)
	if t := same(&e.Last, description, ts, o, schemaToolFunc); t != nil {
		return p.reuse(e, t, fn, o)
	}
	held := new(atomic.Value)
	held.Store(fn)
	return p.declareTool(e, name, description, ts, nil, o, schemaToolFunc, held, func(ctx context.Context, raw json.RawMessage) (string, error) {
		return held.Load().(func(context.Context, json.RawMessage) (string, error))(ctx, orEmpty(raw))
	})
}
