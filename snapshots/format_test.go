package snapshots_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// assertFormatStep checks that FormatStep, which reads of the steps before
// the one it shows only their requests, shows each of steps as the file of
// the steps up to it (Format) does.
func assertFormatStep(t *testing.T, steps []*runtime.Step, opts ...snapshots.Option) {
	t.Helper()
	for i, s := range steps {
		if s == nil {
			continue
		}
		file := string(snapshots.Format(steps[:i+1], nil, opts...))
		var want strings.Builder
		in := false
		for line := range strings.Lines(file) {
			if name, ok := strings.CutPrefix(line, "-- "); ok && strings.HasSuffix(line, " --\n") {
				in = strings.HasPrefix(name, fmt.Sprintf("step %d/", s.Number)) || strings.HasPrefix(name, fmt.Sprintf("step %d decided/", s.Number))
			}
			if in {
				want.WriteString(line)
			}
		}
		assert.NotEmpty(t, want.String(), "step %d in:\n%s", i, file)
		assert.Equal(t, want.String(), snapshots.FormatStep(steps, i, opts...), "FormatStep of record %d (step %d)", i, s.Number)
	}
	assert.Empty(t, snapshots.FormatStep(steps, len(steps), opts...), "FormatStep out of range")
}
