package viewer

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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
		if err != nil {
			t.Errorf("%v", err)
			return nil
		}
		if len(run.Steps) == 0 && run.Error == "" {
			t.Errorf("%s: no steps", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Fatalf("found %d golden files, want at least 10", n)
	}
}

// TestGoldenApprovalAndAnswer reads the golden files of a run paused for
// approvals and of a run ending with a typed answer: the record that
// completes a paused step is a step of its own, with the decisions, and the
// request after it is compared with the last request sent.
func TestGoldenApprovalAndAnswer(t *testing.T) {
	read := func(path string) *Run {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		run, err := FromGolden(path, data)
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	run := read("../../../../snapshots/testdata/TestApprovalGolden.txtar")
	if len(run.Steps) != 3 || run.Steps[1].Label != "decided" || run.Steps[1].Number != 0 {
		t.Fatalf("steps: want step 0, step 0 decided, step 1; got %d steps", len(run.Steps))
	}
	notes := strings.Join(run.Steps[0].Notes, "\n") + "\n" + strings.Join(run.Steps[1].Notes, "\n")
	for _, want := range []string{"awaiting approval: call_1 pay", "decided: call_1 pay approved", "decided: call_3 pay denied"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q lack %q", notes, want)
		}
	}
	if d := run.Steps[2].Diff; d.Shared != 1 || len(d.Added) != 4 {
		t.Errorf("step 1's diff = %+v, want 1 shared with step 0's request and 4 added", d)
	}

	run = read("../../../../examples/structured/testdata/TestStructured/tool.txtar")
	last := run.Steps[len(run.Steps)-1]
	if !slices.ContainsFunc(last.Notes, func(n string) bool { return strings.HasPrefix(n, "typed answer: {") }) {
		t.Errorf("last step's notes %q lack the typed answer", last.Notes)
	}
}
