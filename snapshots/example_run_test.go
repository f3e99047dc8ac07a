package snapshots_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/reprompt/reprompt/snapshots"
)

// exampleT stands in for the *testing.T of TestExampleRun, so that the
// example can run outside a test: it names the same golden file and prints
// failures.
type exampleT struct{ testing.TB }

func (exampleT) Helper()                   {}
func (exampleT) Name() string              { return "TestExampleRun" }
func (exampleT) Context() context.Context  { return context.Background() }
func (exampleT) Logf(string, ...any)       {}
func (exampleT) Errorf(f string, a ...any) { fmt.Printf("FAIL: "+f+"\n", a...) }
func (exampleT) Fatalf(f string, a ...any) { fmt.Printf("FAIL: "+f+"\n", a...) }
func (exampleT) Fatal(a ...any)            { fmt.Println(append([]any{"FAIL:"}, a...)...) }

// Run is one call in a test: it runs the prompt on a scripted model and
// compares every step with testdata/<test name>.txtar. Here the golden file
// is TestExampleRun's, which the steps match, so nothing fails.
func ExampleRun() {
	var t testing.TB = exampleT{} // in a test, the *testing.T
	model := snapshots.Script(
		snapshots.CallTool("remember", map[string]string{"name": "Ada"}),
		snapshots.Text("Hello, Ada!"),
	)
	res := snapshots.Run(t, greeter, model)
	fmt.Println(res.Text, res.Steps[len(res.Steps)-1].State["name"])
	// Output: Hello, Ada! Ada
}
