package snapshots_test

import (
	"context"
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/snapshots"
)

// TestMain reports golden files under testdata that no test used.
func TestMain(m *testing.M) { os.Exit(snapshots.CheckUnused(m)) }

type addArgs struct {
	N int `json:"n" jsonschema:"how much to add"`
}

// counter is the prompt the tests snapshot: state, a variable, a tool, an
// effect that disables the tool and reminds the count once it reaches
// three.
func counter(role string) prompt.Func {
	return func(p *prompt.Prompt) error {
		count, setCount := prompt.State(p, "count", 0)
		p.DefSystem("role", role)
		countVar := p.Def("count", strconv.Itoa(count))
		add := prompt.DefTool(p, "add", "Add n to the count.",
			func(ctx context.Context, a addArgs) (string, error) {
				setCount.Update(ctx, func(c int) int { return c + a.N })
				return fmt.Sprintf("added %d", a.N), nil
			})
		p.Effect(effects.On(effects.Named("count", count)), func(ctx context.Context, s *effects.Step) error {
			if count >= 3 {
				add.Disable()
				countVar.Remind()
			}
			return nil
		})
		p.User("Count to three, then say so.")
		return nil
	}
}

func counterScript() *snapshots.Model {
	return snapshots.Script(
		snapshots.CallTool("add", addArgs{N: 1}),
		snapshots.CallTool("add", addArgs{N: 2}),
		snapshots.Text("The count is three."),
	)
}

// fakeTB is a testing.TB that records what a test reports instead of
// failing the real test. Fatalf ends the goroutine it is called from; use
// it through runFake.
type fakeTB struct {
	testing.TB
	name string

	mu                   sync.Mutex
	errors, fatals, logs []string
}

func (f *fakeTB) Helper()      {}
func (f *fakeTB) Name() string { return f.name }

func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.fatals = append(f.fatals, fmt.Sprintf(format, args...))
	f.mu.Unlock()
	goruntime.Goexit()
}

func (f *fakeTB) Logf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}

// failed returns everything reported as a failure, joined.
func (f *fakeTB) failed() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(append(append([]string{}, f.errors...), f.fatals...), "\n")
}

// runFake runs fn with a fake TB named name, in its own goroutine so that
// Fatalf can end it, and returns the fake once fn returned or called Fatalf.
func runFake(t *testing.T, name string, fn func(tb testing.TB)) *fakeTB {
	t.Helper()
	f := &fakeTB{TB: t, name: name}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f
}

// setEnv sets the update and CI variables for the test.
func setEnv(t *testing.T, update, ci string) {
	t.Setenv(snapshots.UpdateEnv, update)
	t.Setenv(snapshots.CIEnv, ci)
}
