package runtime_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/prompt"
)

type account struct {
	UserName string            `json:"user_name"`
	Email    string            `json:"email,omitempty"`
	Zip      string            `json:"zip"`
	Age      int               `json:"age,omitempty"`
	Secret   string            `json:"-"`
	Note     string            `json:"note"`
	Labels   map[string]string `json:"labels,omitempty"`
	Address  address           `json:"address"`
	Seen     time.Time         `json:"seen"`
	Untagged bool
	Level    level `json:"level"`
}

type address struct {
	Street string `json:"street"`
	City   string `json:"city"`
}

type level int

func (l level) MarshalJSON() ([]byte, error) {
	return []byte(`"level-` + strings.Repeat("i", int(l)) + `"`), nil
}

// Issue 8 item 13: DefData renders with the names and omissions of the
// value's JSON form, keys in JSON order (struct fields as declared, not
// sorted; map keys sorted), strings quoted only where YAML needs it.
func TestDefDataRendersItsJSONForm(t *testing.T) {
	v := account{
		UserName: "ada",
		Zip:      "01234",               // would be read as a number unquoted
		Secret:   "hunter2",             // json:"-"
		Note:     "a <b> & c\nline two", // not HTML-escaped; multi-line
		Labels:   map[string]string{"z": "last", "a": "yes"},
		Address:  address{Street: "1 Main St", City: "Paris"},
		Seen:     time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Untagged: true,
		Level:    2,
	}
	req := firstRequest(t, func(p *prompt.Prompt) error {
		p.DefData("account", v)
		p.DefData("empty", address{})
		return nil
	})
	want := "<variables>\n<account>\n" +
		"user_name: ada\n" +
		"zip: \"01234\"\n" +
		"note: |-\n    a <b> & c\n    line two\n" +
		"labels:\n    a: \"yes\"\n    z: last\n" +
		"address:\n    street: 1 Main St\n    city: Paris\n" +
		"seen: \"2026-01-02T03:04:05Z\"\n" +
		"Untagged: true\n" +
		"level: level-ii\n" +
		"</account>\n" +
		"<empty>\nstreet: \"\"\ncity: \"\"\n</empty>\n" +
		"</variables>"
	assert.Empty(t, cmp.Diff(want, req.System), "system prompt mismatch (-want +got)")
	require.NotContains(t, req.System, "hunter2")
}
