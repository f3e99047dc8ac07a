package steprec_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/steprec"
)

// oneStep returns a run of one step whose request has system and a tool
// message with content, and whose result has content too.
func oneStep(system, content string) *steprec.Run {
	return &steprec.Run{Steps: []*steprec.Step{{
		Request: &steprec.Request{System: system, Messages: []defs.Message{
			{Role: defs.RoleUser, Content: content},
		}},
		Results: []steprec.Result{{CallID: "c1", Name: "t", Arguments: "{}", Content: content}},
	}}}
}

// TestWriteShowsEveryChange checks that requests that differ are written
// differently: a golden file that reads the same for both passes when the
// request changed.
func TestWriteShowsEveryChange(t *testing.T) {
	pairs := []struct{ name, a, b string }{
		{"trailing line break", "a\nb", "a\nb\n"},
		{"escaped marker", "-- x --", `\-- x --`},
	}
	for _, p := range pairs {
		t.Run(p.name+"/system", func(t *testing.T) {
			assert.NotEqual(t, string(steprec.Write(oneStep(p.a, "c"), steprec.WriteOptions{})),
				string(steprec.Write(oneStep(p.b, "c"), steprec.WriteOptions{})))
		})
		t.Run(p.name+"/content", func(t *testing.T) {
			assert.NotEqual(t, string(steprec.Write(oneStep("s", p.a), steprec.WriteOptions{})),
				string(steprec.Write(oneStep("s", p.b), steprec.WriteOptions{})))
		})
	}
}

// TestEscapedMarkerRoundTrips checks that system prompt lines that start
// with a backslash read back as they were.
func TestEscapedMarkerRoundTrips(t *testing.T) {
	for _, sys := range []string{"-- x --", `\-- x --`, `\\-- x --`, `\-- not a marker`, `\`} {
		got, err := steprec.Parse(steprec.Write(oneStep("a\n"+sys+"\nb", "c"), steprec.WriteOptions{}))
		if assert.NoError(t, err) {
			assert.Equal(t, "a\n"+sys+"\nb", got.Steps[0].Request.System)
		}
	}
}

// TestTrailingLineBreaksRoundTrip checks that the line breaks that end a
// text read back as they were written.
func TestTrailingLineBreaksRoundTrip(t *testing.T) {
	for _, v := range []string{"a", "a\n", "a\nb", "a\nb\n", "a\n\n", "\n", "a\n\nb\n\n\n"} {
		run := oneStep(v, v)
		run.Err = v
		run.Steps[0].State = map[string]string{"k": v}
		text := steprec.Write(run, steprec.WriteOptions{})
		got, err := steprec.Parse(text)
		if assert.NoError(t, err, "%q:\n%s", v, text) {
			assert.Equal(t, run, got, "%q:\n%s", v, text)
			assert.Equal(t, string(text), string(steprec.Write(got, steprec.WriteOptions{})))
		}
	}
}
