package prompt_test

import (
	"errors"
	"testing"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/prompt"
)

// A hook called from another goroutine panics with a *MisuseError, also
// while the prompt function executes on its own goroutine (a goroutine a
// tool or an effect started that outlived it). Before the fix, a hook
// checked only that an execution was under way, so the other goroutine's
// call went through, racing with the execution's declarations.
func TestHookFromAnotherGoroutineDuringExecution(t *testing.T) {
	p := prompt.New("")
	got := make(chan any, 1)
	fn := func(p *prompt.Prompt) error {
		p.Def("own", "x")
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() { got <- recover() }()
			p.Def("stray", "y")
		}()
		<-done
		return nil
	}
	if _, err := p.Execute(0, fn); err != nil {
		t.Fatal(err)
	}
	v := <-got
	err, _ := v.(error)
	var me *prompt.MisuseError
	if !errors.As(err, &me) || me.Hook != "Def" {
		t.Fatalf("the hook called from another goroutine recovered %v, want a *prompt.MisuseError for Def", v)
	}
	if _, ok := p.Registry().Lookup(defs.KindVariable, "stray"); ok {
		t.Error("the other goroutine's declaration was made")
	}
}

// Step may be read from a goroutine a tool left running while the next
// executions go on (under -race: no unguarded read).
func TestStepReadFromAnotherGoroutine(t *testing.T) {
	p := prompt.New("")
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				if s := p.Step(); s < 0 || s > 100 {
					t.Errorf("step %d", s)
				}
			}
		}
	}()
	for step := range 100 {
		if _, err := p.Execute(step, func(*prompt.Prompt) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	<-done
	if p.Step() != 99 {
		t.Errorf("Step() = %d after step 99", p.Step())
	}
}
