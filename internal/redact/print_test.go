package redact_test

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/reprompt/reprompt/internal/redact"
)

type printable struct {
	APIKey string
	Model  string
}

// config stands for an adapter's Config.
type config printable

func (c config) printable() printable {
	c.APIKey = redact.Key(c.APIKey)
	return printable(c)
}
func (c config) String() string                { return redact.String("pkg.Config", c.printable()) }
func (c config) GoString() string              { return redact.GoString("pkg.Config", c.printable()) }
func (c config) Format(f fmt.State, verb rune) { redact.Format(f, verb, c) }
func (c config) LogValue() slog.Value {
	return slog.GroupValue(redact.ConfigAttrs("u", c.Model, c.APIKey)...)
}

// TestPrint: the key shows as Text under every verb, the type under the
// adapter's name, and not at all when there is none.
func TestPrint(t *testing.T) {
	c := config{APIKey: "sk-SECRET", Model: "m"}
	assert.Equal(t, "pkg.Config{APIKey:[redacted] Model:m}", fmt.Sprintf("%+v", c))
	assert.Equal(t, "pkg.Config{APIKey:[redacted] Model:m}", fmt.Sprint(c))
	assert.Equal(t, `redact_test.printable{APIKey:"[redacted]", Model:"m"}`, fmt.Sprintf("%#v", c.printable()))
	assert.Equal(t, `pkg.Config{APIKey:"[redacted]", Model:"m"}`, fmt.Sprintf("%#v", c))
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		assert.NotContains(t, fmt.Sprintf(verb, c), "SECRET", verb)
	}
	assert.Equal(t, "[base_url=u model=m api_key=[redacted]]", c.LogValue().String())

	none := config{Model: "m"}
	assert.Equal(t, "pkg.Config{APIKey: Model:m}", none.String())
	assert.Equal(t, "[base_url=u model=m]", none.LogValue().String(), "no key: no api_key")
	assert.Empty(t, redact.Key(""))
	assert.Equal(t, redact.Text, redact.Key("k"))
}
