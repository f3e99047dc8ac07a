package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/evals"
)

// TestProgressTail: the lines appended to a progress file are read as
// they come, a line cut in two once it is whole; a line that is not a
// Progress is skipped.
func TestProgressTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "progress.jsonl")
	w, err := os.Create(path)
	require.NoError(t, err)
	defer w.Close()
	r, err := os.Open(path)
	require.NoError(t, err)
	defer r.Close()
	tail := &progressTail{f: r}

	line := func(ev evals.Progress) string {
		b, err := json.Marshal(ev)
		require.NoError(t, err)
		return string(b) + "\n"
	}
	start := evals.Progress{Event: "start", Eval: "triage", Cases: 2, K: 3}
	run := evals.Progress{Event: "run", Eval: "triage", Case: "a", Run: 1, Pass: true, Tokens: 12}
	assert.Empty(t, tail.read(), "nothing written")

	half := len(line(run)) / 2
	_, err = w.WriteString(line(start) + "not json\n" + "{}\n" + line(run)[:half])
	require.NoError(t, err)
	assert.Empty(t, cmp.Diff([]evals.Progress{start}, tail.read()), "the whole lines, the others skipped (-want +got)")
	_, err = w.WriteString(line(run)[half:])
	require.NoError(t, err)
	assert.Empty(t, cmp.Diff([]evals.Progress{run}, tail.read()), "the line, once whole (-want +got)")
	assert.Empty(t, tail.read(), "nothing more")
}

// clock is a clock the test moves.
type clock struct{ t time.Time }

func (c *clock) now() time.Time      { return c.t }
func (c *clock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock               { return &clock{time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)} }
func runEv(c string, r int, pass bool) evals.Progress {
	ev := evals.Progress{Event: "run", Eval: "triage", Case: c, Run: r, Pass: pass, Tokens: 400, Cost: 0.0015, LatencyMS: 900}
	if !pass {
		ev.Failed = []string{"expected"}
	}
	return ev
}

// progressEvents feeds v an eval of 2 cases × 2 runs, a run ending every
// second and a tick every 500ms, then its end.
func progressEvents(v *progressView, c *clock) {
	v.add(evals.Progress{Event: "start", Eval: "triage", Cases: 2, K: 2})
	for i, pass := range []bool{true, false, true, true} {
		c.add(500 * time.Millisecond)
		v.tick()
		c.add(500 * time.Millisecond)
		v.add(runEv([]string{"a", "b"}[i/2], i%2, pass))
		v.tick()
	}
	v.add(evals.Progress{Event: "end", Eval: "triage", Result: "/out/triage.json", LatencyMS: 4012})
	v.done()
}

// TestProgressPlain: not on a terminal, the progress is plain lines: the
// start, one every v.every while runs end, the end; no control sequence.
func TestProgressPlain(t *testing.T) {
	var b bytes.Buffer
	c := newClock()
	v := newProgressView(&b, false)
	v.now, v.every = c.now, 2*time.Second
	progressEvents(v, c)
	want := `eval triage: 2 cases × 2 runs
eval triage: 2/4 runs, 1 failed, 800 tokens, $0.0030, 2s
eval triage: 4/4 runs, 1 failed, 1.6k tokens, $0.0060, 4s
eval triage: 4/4 runs, 1 failed, 1.6k tokens, $0.0060, 4s, done
`
	assert.Equal(t, want, b.String(), "the lines")
	assert.NotContains(t, b.String(), "\x1b", "no escape sequence")
	assert.NotContains(t, b.String(), "\r", "no carriage return")
}

// TestProgressTTY: on a terminal, a bar drawn over one line, redrawn
// when it changes, cleared for the lines of the start and the end.
func TestProgressTTY(t *testing.T) {
	var b bytes.Buffer
	c := newClock()
	v := newProgressView(&b, true)
	v.now = c.now
	progressEvents(v, c)
	out := b.String()
	draws := strings.Split(out, "\r\x1b[K")
	want := []string{
		"eval triage: 2 cases × 2 runs\n",
		"triage ░░░░░░░░░░░░░░░░ 0/4 runs, 0 failed, 0 tokens, $0.0000, 0s",
		"triage ░░░░░░░░░░░░░░░░ 0/4 runs, 0 failed, 0 tokens, $0.0000, 500ms",
		"triage ████░░░░░░░░░░░░ 1/4 runs, 0 failed, 400 tokens, $0.0015, 1s",
		"triage ████░░░░░░░░░░░░ 1/4 runs, 0 failed, 400 tokens, $0.0015, 1.5s",
		"triage ████████░░░░░░░░ 2/4 runs, 1 failed, 800 tokens, $0.0030, 2s",
		"triage ████████░░░░░░░░ 2/4 runs, 1 failed, 800 tokens, $0.0030, 2.5s",
		"triage ████████████░░░░ 3/4 runs, 1 failed, 1.2k tokens, $0.0045, 3s",
		"triage ████████████░░░░ 3/4 runs, 1 failed, 1.2k tokens, $0.0045, 3.5s",
		"triage ████████████████ 4/4 runs, 1 failed, 1.6k tokens, $0.0060, 4s",
		"eval triage: 4/4 runs, 1 failed, 1.6k tokens, $0.0060, 4s, done\n",
	}
	assert.Empty(t, cmp.Diff(want, draws), "the bar's draws (-want +got)")

	// Before an eval starts, what runs meanwhile.
	b.Reset()
	c = newClock()
	v = newProgressView(&b, true)
	v.now, v.created, v.waiting = c.now, c.now(), "go test -count=1 ./triage"
	c.add(1500 * time.Millisecond)
	v.tick()
	v.add(evals.Progress{Event: "start", Eval: "triage", Cases: 1, K: 1})
	assert.Equal(t, "\r\x1b[Kgo test -count=1 ./triage … 1.5s\r\x1b[Keval triage: 1 case × 1 run\n\r\x1b[Ktriage ░░░░░░░░░░░░░░░░ 0/1 runs, 0 failed, 0 tokens, $0.0000, 0s", b.String(), "go test, then the eval")

	// A long name is cut, and the line kept within 79 characters.
	b.Reset()
	v = newProgressView(&b, true)
	v.now = c.now
	v.add(evals.Progress{Event: "start", Eval: strings.Repeat("long-eval-name-", 4) + "\x1b[2J", Cases: 1000, K: 100})
	v.add(evals.Progress{Event: "run", Eval: strings.Repeat("long-eval-name-", 4) + "\x1b[2J", Tokens: 123456789, Cost: 1234.5})
	draws = strings.Split(b.String(), "\r\x1b[K")
	require.Len(t, draws, 3, "the start's line, a bar, a bar: %q", b.String())
	assert.Equal(t, "long-eval-name-… ░░░░░░░░░░░░░░░░ 1/100000 runs, 1 failed, 123.5M tokens, $1234", draws[2], "the bar of a long name, cut")
	assert.Equal(t, 79, utf8.RuneCountInString(draws[2]), "the bar's width")
	assert.NotContains(t, strings.ReplaceAll(b.String(), "\r\x1b[K", ""), "\x1b", "the eval's name, made printable")
}
