package crashtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/convtest"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/sqlite"
)

const (
	convEnv     = "REPROMPT_CRASHTEST_CONVERSATION" // the child runs the conversation
	convKillEnv = "REPROMPT_CRASHTEST_CONVERSATION_KILL"
	convKills   = 50 // at least, over the test
)

// A child's kill: the parent's timer, or the child's own SIGKILL at the
// n-th occurrence of a point of the run.
const (
	killTimer      = "timer"       // the parent's, at a random moment
	killSave       = "save"        // right after the n-th save returned: between saves
	killTurnSave   = "turn"        // right after the n-th save of a new turn: before its model request
	killStepSave   = "step"        // right after the n-th save that ends a step and not its turn
	killTurnEnd    = "done"        // right after the n-th save that ends a turn: between turns
	killToolBefore = "tool-before" // in the n-th charge, before the charge is made
	killToolAfter  = "tool-after"  // in the n-th charge, after it was made, before the tool returns
)

var killKinds = []string{killTimer, killSave, killTurnSave, killStepSave, killTurnEnd, killToolBefore, killToolAfter}

// killSaves are the saves after which each kind of kill strikes.
var killSaves = map[string]func(*session.Checkpoint) bool{
	killSave:     func(*session.Checkpoint) bool { return true },
	killTurnSave: isTurnSave,
	killStepSave: func(cp *session.Checkpoint) bool { return !cp.Done && cp.Pending == nil && !isTurnSave(cp) },
	killTurnEnd:  func(cp *session.Checkpoint) bool { return cp.Done },
}

// convChild runs the conversation of internal/convtest in the database of
// dir as a process that restarts does: resumed if the session exists (the
// turn it stopped inside finished first), then continued with the turns
// whose message is not in the transcript yet. It exits 0 once the
// conversation is over, or kills itself at the point convKillEnv names.
func convChild(dir string) {
	if err := convProcess(dir, os.Getenv(convKillEnv)); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

func convProcess(dir, kill string) error {
	ctx := context.Background()
	st, err := sqlite.Open(filepath.Join(dir, "sessions.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	var store session.Store = st
	l := convtest.NewLedger(dir)
	kind, arg, _ := strings.Cut(kill, ":")
	n, _ := strconv.Atoi(arg)
	var seen atomic.Int32
	die := func() {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
	switch kind {
	case killSave, killTurnSave, killStepSave, killTurnEnd:
		store = &killingStore{Store: st, match: killSaves[kind], after: n, die: die}
	case killToolBefore, killToolAfter:
		l.Hook = func(id, point string) {
			if "tool-"+point == kind && int(seen.Add(1)) == n {
				die()
			}
		}
	}
	cfg := runtime.Config{Store: store, SessionID: convtest.SessionID}
	fn := convtest.Agent(l)
	r, err := runtime.Resume(ctx, convtest.Model{}, fn, cfg)
	if errors.Is(err, session.ErrNotFound) {
		r, err = runtime.New(convtest.Model{}, fn, cfg), nil
	}
	if err != nil {
		return err
	}
	fmt.Println(readyLine) // the parent's kill timer starts now
	return convtest.Converse(ctx, r)
}

// killingStore kills the process right after the after-th save it made
// of a checkpoint that match accepts.
type killingStore struct {
	session.Store
	match func(*session.Checkpoint) bool
	after int
	saves int
	die   func()
}

func (s *killingStore) Save(ctx context.Context, cp *session.Checkpoint) error {
	if err := s.Store.Save(ctx, cp); err != nil {
		return err
	}
	if s.match(cp) {
		s.saves++
	}
	if s.saves == s.after {
		s.die()
	}
	return nil
}

// isTurnSave reports whether cp is the save of a new turn, before the
// model answers its message.
func isTurnSave(cp *session.Checkpoint) bool {
	n := len(cp.Transcript)
	return !cp.Done && cp.Pending == nil && n > 0 && cp.Transcript[n-1].Role == defs.RoleUser
}

// TestCrashConversation kills a process holding a 20-turn conversation
// (internal/convtest: tools, effects, state) on SQLite with SIGKILL at
// random points, at least 50 times, and starts it again each time: it
// resumes the session, finishes the turn it died in, and continues with
// the turns whose message is not stored yet. The kills are the parent's,
// at a random moment, or the child's own, at a random occurrence of a
// point: after a save, after the save of a new turn (before its model
// request), after the save that ends a step or a turn, in the
// non-idempotent "charge" before or after the charge; each kind of kill
// strikes once before they are drawn at random.
// At the end of each round the transcript and state equal an
// uninterrupted run's, and each charge was made exactly once though the
// tool ran again after kills. Seeded: REPROMPT_CRASH_SEED replays.
func TestCrashConversation(t *testing.T) {
	if testing.Short() {
		t.Skip("starts many processes")
	}
	rng := crashRNG(t)
	start := time.Now()
	want, runTime := uninterruptedConversation(t)
	t.Setenv(convEnv, "1") // inherited by the children

	kinds := slices.Clone(killKinds)
	rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	kills, rounds, extra := 0, 0, 0
	byKind := map[string]int{}
	where := map[string]int{} // the latest checkpoint after each kill (see convProgress)
	for kills < convKills {
		rounds++
		dir := t.TempDir()
		roundKills := 0
		for attempt := 0; ; attempt++ {
			require.LessOrEqual(t, attempt, 1000, "round %d: no completion after %d attempts", rounds, attempt)
			kind := ""
			switch {
			case kills < len(kinds): // each kind once first, in a random order
				kind = kinds[kills]
			case kills < convKills:
				kind = killKinds[rng.IntN(len(killKinds))]
			}
			killed, err := convAttempt(t, rng, dir, kind, runTime)
			if killed {
				kills++
				roundKills++
				byKind[kind]++
				where[convProgress(t, dir)]++
				continue
			}
			require.NoError(t, err, "round %d attempt %d (kill %q)", rounds, attempt, kind)
			break // the conversation is over (a kill's point was not reached)
		}
		st, err := sqlite.Open(filepath.Join(dir, "sessions.db"))
		require.NoError(t, err)
		got, err := convtest.OutcomeOf(context.Background(), st, convtest.SessionID)
		st.Close()
		require.NoError(t, err)
		require.Empty(t, cmp.Diff(want, got), "round %d (%d kills): the conversation differs from an uninterrupted one (-want +got)", rounds, roundKills)
		l := convtest.NewLedger(dir)
		charges, err := l.Charges()
		require.NoError(t, err)
		require.Empty(t, cmp.Diff(convtest.Calls(), charges), "round %d (%d kills): charges by call id (-want +got)", rounds, roundKills)
		attempts, err := l.Attempts()
		require.NoError(t, err)
		again := 0
		for _, n := range attempts {
			again += n - 1
		}
		assert.LessOrEqual(t, again, roundKills, "round %d: charge ran again %d times for %d kills", rounds, again, roundKills)
		extra += again
		t.Logf("round %d: %d kills, charge ran again %d times, outcome checked", rounds, roundKills, again)
	}
	t.Logf("%d kills in %d rounds in %v (uninterrupted run %v); kills by kind %v; latest checkpoint after a kill %v; charges run again %d times (each charged once)",
		kills, rounds, time.Since(start).Round(time.Millisecond), runTime.Round(time.Millisecond), byKind, where, extra)
	for _, w := range []string{"tool", "turn", "step", "between"} {
		assert.NotZero(t, where[w], "no kill left the latest checkpoint %q: the test did not test it (%v)", w, where)
	}
	assert.NotZero(t, extra, "no charge ran again after a kill: the ledger was not tested")
}

// uninterruptedConversation runs the conversation in this process on a
// database of its own, and returns its outcome and how long it took.
func uninterruptedConversation(t *testing.T) (convtest.Outcome, time.Duration) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, "sessions.db"))
	require.NoError(t, err)
	defer st.Close()
	start := time.Now()
	r := runtime.New(convtest.Model{}, convtest.Agent(convtest.NewLedger(dir)), runtime.Config{Store: st, SessionID: convtest.SessionID})
	require.NoError(t, convtest.Converse(ctx, r), "uninterrupted conversation")
	runTime := time.Since(start)
	want, err := convtest.OutcomeOf(ctx, st, convtest.SessionID)
	require.NoError(t, err)
	require.True(t, want.Done, "uninterrupted conversation: Done")
	require.Equal(t, convtest.Turns, convtest.NextTurn(want.Transcript), "uninterrupted conversation: turns")
	return want, runTime
}

// convAttempt starts the child on dir with a kill of the kind given ("":
// none) and waits for it to end. killed reports that a SIGKILL ended it.
func convAttempt(t *testing.T, rng *rand.Rand, dir, kind string, runTime time.Duration) (killed bool, err error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	switch kind {
	case killSave:
		cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%s:%d", convKillEnv, kind, 1+rng.IntN(12)))
	case killTurnSave, killStepSave, killTurnEnd:
		cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%s:%d", convKillEnv, kind, 1+rng.IntN(2)))
	case killToolBefore, killToolAfter:
		cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%s:%d", convKillEnv, kind, 1+rng.IntN(3)))
	}
	var stderr strings.Builder
	stdout := &readyWriter{ready: make(chan struct{})}
	cmd.Stderr, cmd.Stdout = &stderr, stdout
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-exited:
	case <-stdout.ready:
		if kind != killTimer {
			werr = <-exited
			break
		}
		// Within about a tenth of an uninterrupted run.
		select {
		case werr = <-exited:
		case <-time.After(time.Duration(rng.Int64N(int64(time.Millisecond + runTime/10)))):
			_ = cmd.Process.Signal(syscall.SIGKILL)
			werr = <-exited
		}
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		return false, errors.New("the child did not report ready in 2 minutes")
	}
	var ee *exec.ExitError
	if errors.As(werr, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL {
		return true, nil
	}
	if werr != nil {
		return false, fmt.Errorf("child failed: %w\n%s", werr, stderr.String())
	}
	return false, nil
}

// convProgress says where the latest checkpoint of the conversation in dir
// is: "none" (no checkpoint), "tool" (a step's reply saved, its tools
// under way), "turn" (a new turn saved, not answered), "step" (between two
// steps of a turn) or "between" (between two turns). It fails the test
// when the checkpoint does not load.
func convProgress(t *testing.T, dir string) string {
	st, err := sqlite.Open(filepath.Join(dir, "sessions.db"))
	require.NoError(t, err)
	defer st.Close()
	cp, err := st.Latest(context.Background(), convtest.SessionID)
	if errors.Is(err, session.ErrNotFound) {
		return "none"
	}
	require.NoError(t, err, "the latest checkpoint after a kill")
	require.NoError(t, runtime.ValidateMessages(cp.Transcript), "the transcript after a kill")
	switch {
	case cp.Pending != nil:
		return "tool"
	case cp.Done:
		return "between"
	case isTurnSave(cp):
		return "turn"
	default:
		return "step"
	}
}
