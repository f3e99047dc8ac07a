package snapshots_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/reprompt/reprompt/snapshots"
)

// goldenT stands in for the *testing.T of a test, so that ExampleGolden
// can run outside one: it prints failures.
type goldenT struct{ testing.TB }

func (goldenT) Helper()                   {}
func (goldenT) Name() string              { return "TestPromptText" }
func (goldenT) Logf(string, ...any)       {}
func (goldenT) Errorf(f string, a ...any) { fmt.Printf("FAIL: "+f+"\n", a...) }
func (goldenT) Fatalf(f string, a ...any) { fmt.Printf("FAIL: "+f+"\n", a...) }

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
