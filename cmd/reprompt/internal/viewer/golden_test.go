package viewer

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/internal/steprec"
)

// TestGoldenFilesOfTheRepository reads every golden step file of the
// module: none is refused, and each has steps.
func TestGoldenFilesOfTheRepository(t *testing.T) {
	n := 0
	err := filepath.WalkDir("../../../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".txtar") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil || !strings.HasPrefix(string(data), steprec.Header) {
			return err
		}
		n++
		run, err := FromGolden(path, data)
		if !assert.NoError(t, err, "FromGolden(%s)", path) {
			return nil
		}
		assert.True(t, len(run.Steps) > 0 || run.Error != "", "%s: no steps", path)
		return nil
	})
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, 10, "found %d golden files, want at least 10", n)
}

// TestGoldenApprovalAndAnswer reads the golden files of a run paused for
// approvals and of a run ending with a typed answer: the record that
// completes a paused step is a step of its own, with the decisions, and the
// request after it is compared with the last request sent.
func TestGoldenApprovalAndAnswer(t *testing.T) {
	read := func(path string) *Run {
		t.Helper()
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		run, err := FromGolden(path, data)
		require.NoError(t, err)
		return run
	}
	run := read("../../../../snapshots/testdata/TestApprovalGolden.txtar")
	require.Len(t, run.Steps, 3, "steps: want step 0, step 0 decided, step 1")
	require.Equal(t, "decided", run.Steps[1].Label, "steps[1]: want step 0 decided")
	require.Equal(t, 0, run.Steps[1].Number, "steps[1]: want step 0 decided")
	notes := strings.Join(run.Steps[0].Notes, "\n") + "\n" + strings.Join(run.Steps[1].Notes, "\n")
	for _, want := range []string{"awaiting approval: call_1 pay", "decided: call_1 pay approved", "decided: call_3 pay denied"} {
		assert.Contains(t, notes, want, "notes %q lack %q", notes, want)
	}
	d := run.Steps[2].Diff
	assert.Equal(t, 1, d.Shared, "step 1's diff = %+v: messages shared with step 0's request", d)
	assert.Len(t, d.Added, 4, "step 1's diff = %+v: messages added", d)

	run = read("../../../../examples/structured/testdata/TestStructured/tool.txtar")
	last := run.Steps[len(run.Steps)-1]
	assert.True(t, slices.ContainsFunc(last.Notes, func(n string) bool { return strings.HasPrefix(n, "typed answer: {") }), "last step's notes %q lack the typed answer", last.Notes)
}
