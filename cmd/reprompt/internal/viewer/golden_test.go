package viewer_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/cmd/reprompt/internal/showtext"
	"github.com/reprompt/reprompt/cmd/reprompt/internal/viewer"
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
		run, err := viewer.FromGolden(path, data)
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
	read := func(path string) *viewer.Run {
		t.Helper()
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		run, err := viewer.FromGolden(path, data)
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

// TestGoldenCutShort reads a golden file cut short, or damaged, at several
// places: the steps before the damage are shown, as the whole file shows
// them, the last one read is marked damaged, and the error says where.
func TestGoldenCutShort(t *testing.T) {
	path := "../../../../snapshots/testdata/TestConversationGolden.txtar"
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	whole, err := viewer.FromGolden(path, data)
	require.NoError(t, err)
	require.Len(t, whole.Steps, 4, "steps of the whole file")
	text := string(data)
	step2 := strings.Index(text, "-- step 2/")
	require.Positive(t, step2, "the file has no step 2")
	for _, tc := range []struct {
		name  string
		data  string
		steps int
		err   string
	}{
		{"before step 2", text[:step2], 2, ": no end section: the file is cut short"},
		{"in a line of step 2", text[:step2+strings.Index(text[step2:], "content: ")+12], 3, ": no end section: the file is cut short"},
		{"damaged in step 2", text[:step2] + "-- step 2/reply --\ncolor: red\n" + text[step2:], 3, `section "step 2/reply": unknown field "color"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, err := viewer.FromGolden(path, []byte(tc.data))
			_, ok := errors.AsType[*viewer.FormatError](err)
			require.True(t, ok, "FromGolden: want a *FormatError, got %v", err)
			assert.Contains(t, err.Error(), tc.err, "FromGolden's error")
			require.NotNil(t, run, "FromGolden: the steps read before the damage")
			require.Len(t, run.Steps, tc.steps, "steps read")
			for i, s := range run.Steps[:tc.steps-1] {
				assert.Empty(t, s.Damage, "step %d: damage", i)
				assert.Equal(t, whole.Steps[i].Number, s.Number, "step %d: number", i)
				assert.Equal(t, whole.Messages[whole.Steps[i].Reply], run.Messages[s.Reply], "step %d: reply", i)
			}
			last := run.Steps[tc.steps-1]
			assert.Contains(t, last.Damage, "this step may be incomplete", "the last step read: damage")
			assert.False(t, run.Done, "a damaged file's run: Done")
			assert.Contains(t, strings.Join(run.Notes, "\n"), "the rest of the file could not be read", "notes")

			var b strings.Builder
			require.NoError(t, showtext.Write(&b, run, showtext.Options{Steps: true}))
			for _, s := range run.Steps {
				assert.Contains(t, b.String(), fmt.Sprintf("── step %d", s.Number), "show: the steps read")
			}
		})
	}
}

// TestGoldenCacheMiss reads a golden file whose compactions broke the
// cached prefix: the steps say why, and `reprompt show` prints it.
func TestGoldenCacheMiss(t *testing.T) {
	path := "../../../../snapshots/testdata/TestCompactionSummaries.txtar"
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	run, err := viewer.FromGolden(path, data)
	require.NoError(t, err)
	var missed []int
	for _, s := range run.Steps {
		if s.CacheMiss != "" {
			missed = append(missed, s.Number)
			assert.Equal(t, "transcript rewritten by commit (effect key:compact#1)", s.CacheMiss, "step %d: CacheMiss", s.Number)
		}
	}
	assert.Empty(t, cmp.Diff([]int{6, 10}, missed), "steps with a cache miss (-want +got)")
	var b strings.Builder
	require.NoError(t, showtext.Write(&b, run, showtext.Options{Steps: true}))
	assert.Equal(t, 2, strings.Count(b.String(), "cache miss: transcript rewritten by commit (effect key:compact#1)\n"), "show:\n%s", b.String())
}
