package session_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/session"
)

// A checkpoint is saved after every step; each Save writes only the new
// messages. Latest loads the newest, AtStep an earlier one.
func Example() {
	ctx := context.Background()
	st := session.NewMemory()

	cp := &session.Checkpoint{SessionID: "demo", State: []byte(`{"n":0}`)}
	cp.Transcript = append(cp.Transcript, defs.UserMessage("count to two"))
	for step := 1; step <= 2; step++ {
		cp.Step = step
		cp.Transcript = append(cp.Transcript, defs.AssistantMessage(fmt.Sprint(step)))
		cp.State = fmt.Appendf(nil, `{"n":%d}`, step)
		if err := st.Save(ctx, cp); err != nil { // sets cp.Seq
			panic(err)
		}
	}
	latest, _ := st.Latest(ctx, "demo")
	fmt.Println("latest:", latest.Seq, latest.Step, len(latest.Transcript), string(latest.State))
	first, _ := st.AtStep(ctx, "demo", 1)
	fmt.Println("at step 1:", first.Seq, len(first.Transcript), string(first.State))

	_, err := st.Latest(ctx, "other")
	fmt.Println(errors.Is(err, session.ErrNotFound), err)
	// Output:
	// latest: 2 2 3 {"n":2}
	// at step 1: 1 2 {"n":1}
	// true session "other" not found
}

// A Save must follow the latest checkpoint: a stale writer is refused.
func ExampleConflictError() {
	ctx := context.Background()
	st := session.NewMemory()
	a := &session.Checkpoint{SessionID: "s"}
	st.Save(ctx, a)
	b := &session.Checkpoint{SessionID: "s"} // Seq 0: claims to start the session
	err := st.Save(ctx, b)
	var ce *session.ConflictError
	fmt.Println(errors.As(err, &ce), ce.Latest)
	// Output: true 1
}

// Rewind continues a session from an earlier step in a new generation;
// the checkpoints after that step stay loadable.
func ExampleRewind() {
	ctx := context.Background()
	st := session.NewMemory()
	cp := &session.Checkpoint{SessionID: "s"}
	for step := 1; step <= 3; step++ {
		cp.Step = step
		cp.Transcript = append(cp.Transcript, defs.UserMessage(fmt.Sprint("m", step)))
		st.Save(ctx, cp)
	}
	rw, _ := session.Rewind(ctx, st, "s", 1)
	rw.Step = 2
	rw.Transcript = append(rw.Transcript, defs.UserMessage("another m2"))
	st.Save(ctx, rw)

	latest, _ := st.Latest(ctx, "s")
	old, _ := st.AtStep(ctx, "s", 3)
	fmt.Println(latest.Generation, latest.Transcript[1].Content, "|", old.Transcript[1].Content)
	// Output: 1 another m2 | m2
}

// AtSteps reads the checkpoint of every step of a session in one pass
// when the store can (a session.StepReader, as Memory is), and step by
// step with AtStep otherwise: a step without a checkpoint is its
// *NotFoundError, and the other steps still come.
func ExampleAtSteps() {
	ctx := context.Background()
	st := session.NewMemory()
	cp := &session.Checkpoint{SessionID: "s"}
	for _, step := range []int{1, 2, 4} {
		cp.Step = step
		cp.Transcript = append(cp.Transcript, defs.UserMessage(fmt.Sprint("m", step)))
		st.Save(ctx, cp)
	}
	step := 1
	for cp, err := range session.AtSteps(ctx, st, "s", 1, 4) {
		if err != nil {
			fmt.Println(step, errors.Is(err, session.ErrNotFound))
		} else {
			fmt.Println(step, len(cp.Transcript), "messages")
		}
		step++
	}
	// Output:
	// 1 1 messages
	// 2 2 messages
	// 3 true
	// 4 3 messages
}
