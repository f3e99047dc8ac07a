package defs

import "encoding/json"

// Output is the typed final answer a prompt declared for its run
// (prompt.DefOutput): the run ends when the model gives an answer that
// validates against Schema.
type Output struct {
	// Name names the answer: the json_schema name of a response_format, or
	// the answer tool's name. It follows the rules of tool names.
	Name string
	// Description tells the model what the answer is.
	Description string
	// Type is the Go type of the answer, for records and errors.
	Type string
	// Schema is the JSON Schema of the answer, in the strict form OpenAI's
	// structured outputs take: every property required (an optional one
	// admits null), no additional properties. It must not be modified.
	Schema json.RawMessage
	// Validate checks an answer against Schema; the error says what is
	// wrong and where.
	Validate func(answer json.RawMessage) error
}
