package snapshots_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/reprompt/reprompt/snapshots"
)

// goldenT is exampleT (see ExampleRun) named after the golden file of
// ExampleGolden.
type goldenT struct{ exampleT }

func (goldenT) Name() string { return "TestPromptText" }

// Golden compares any text a test produces with a golden file, under the
// update switch of Run: REPROMPT_UPDATE=1 rewrites the file, and a mismatch
// fails with a diff of the "-- name --" sections that differ.
func ExampleGolden() {
	var t testing.TB = goldenT{} // in a test, the *testing.T
	system, user := "You summarise.", strings.Join([]string{"[user]", "Fix the build."}, "\n")
	got := "-- system --\n" + system + "\n-- user --\n" + user + "\n"
	snapshots.Golden(t, "testdata/TestPromptText.golden", []byte(got))
	fmt.Println("compared")
	// Output: compared
}
