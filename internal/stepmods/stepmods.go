// Package stepmods holds what effects change in a step, as package
// effects records it and the runtime applies it, and the estimate of a
// message's tokens both use. It is not part of the effects API: an effect
// changes a step through effects.Step's methods.
package stepmods

import "github.com/reprompt/reprompt/defs"

// Mods are the changes effects made to a step. The runtime applies them.
type Mods struct {
	// Committed is set when the transcript was replaced; Transcript is the
	// new transcript.
	Committed  bool
	Transcript []defs.Message
	// Room is set when Transcript's spare capacity is the runtime's to
	// append to (the copy effects.Step.CopyTranscript made); otherwise
	// the runtime must not write past its length.
	Room bool
	// Viewed is set when this step's messages differ from the transcript;
	// Messages are the messages to send.
	Viewed   bool
	Messages []defs.Message
	// Verbatim is the number of leading Messages that are the transcript
	// itself (all of it after AppendMessages, 0 after ReplaceMessages): the
	// runtime checks and counts only the rest again.
	Verbatim int
	// Tools and Systems, when non-nil, are the only names allowed at this
	// step.
	Tools, Systems []string
	// Variables are values set for this step only, in the order first set.
	Variables []Variable
	// Rewrites is set when an effect declared what it may rewrite at its
	// next run (effects.Step.WillRewrite); RewriteFrom is the earliest
	// such message, an index into the transcript as it was declared.
	Rewrites    bool
	RewriteFrom int
}

// Variable is a variable value set by an effect for one step.
type Variable struct {
	Name  string
	Value any
}

// EstimateTokens estimates a message's tokens at four characters a token,
// plus four tokens of framing.
func EstimateTokens(m defs.Message) int {
	c := len(m.Content) + len(m.Reasoning)
	for _, tc := range m.ToolCalls {
		c += len(tc.Name) + len(tc.Arguments)
	}
	return 4 + (c+3)/4
}
