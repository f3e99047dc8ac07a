package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/reprompt/reprompt/cmd/reprompt/internal/showtext"
	"github.com/reprompt/reprompt/evals"
)

// progressTail reads the lines a go test appends to its progress file
// (evals.ProgressEnv) as they come.
type progressTail struct {
	f       *os.File
	partial []byte // a line not yet ended
	buf     []byte
}

// read returns the lines appended since the last read, each decoded; a
// line that is not a Progress is skipped (the progress is a display).
func (t *progressTail) read() []evals.Progress {
	if t.buf == nil {
		t.buf = make([]byte, 32<<10)
	}
	var evs []evals.Progress
	for {
		n, err := t.f.Read(t.buf)
		t.partial = append(t.partial, t.buf[:n]...)
		for {
			i := bytes.IndexByte(t.partial, '\n')
			if i < 0 {
				break
			}
			var ev evals.Progress
			if json.Unmarshal(t.partial[:i], &ev) == nil && ev.Event != "" {
				evs = append(evs, ev)
			}
			t.partial = t.partial[i+1:]
		}
		if err != nil || n == 0 {
			return evs
		}
	}
}

// evalProgress is what the progress said of one eval.
type evalProgress struct {
	name         string
	cases, k     int
	runs, failed int
	tokens       int
	cost         float64
	start        time.Time
	end          *evals.Progress
}

// progressView draws the progress of the evals a go test runs: on a
// terminal, a bar redrawn in place on one line; otherwise (tty false) a
// plain line when an eval starts and ends and at most one every every
// while it runs, with no control sequence.
type progressView struct {
	w     io.Writer
	tty   bool
	now   func() time.Time
	every time.Duration

	evals   []*evalProgress
	last    time.Time // plain: when the last line was written
	changed bool      // plain: a run ended since the last line
	bar     bool      // tty: a bar is on the current line
	drawn   string    // tty: the bar's line
	// waiting, if not "", is shown (tty) with the time since created
	// until an eval starts: what runs meanwhile.
	waiting string
	created time.Time
}

func newProgressView(w io.Writer, tty bool) *progressView {
	v := &progressView{w: w, tty: tty, now: time.Now, every: 5 * time.Second}
	v.created = v.now()
	return v
}

// live returns the eval that started last and has not ended, nil if none.
func (v *progressView) live() *evalProgress {
	for i := len(v.evals) - 1; i >= 0; i-- {
		if v.evals[i].end == nil {
			return v.evals[i]
		}
	}
	return nil
}

// find returns the eval named name that has not ended, nil if none.
func (v *progressView) find(name string) *evalProgress {
	for i := len(v.evals) - 1; i >= 0; i-- {
		if e := v.evals[i]; e.end == nil && e.name == name {
			return e
		}
	}
	return nil
}

// add takes an event of the progress file.
func (v *progressView) add(ev evals.Progress) {
	switch ev.Event {
	case "start":
		e := &evalProgress{name: ev.Eval, cases: ev.Cases, k: ev.K, start: v.now()}
		v.evals = append(v.evals, e)
		v.line(fmt.Sprintf("eval %s: %d %s × %d %s", showtext.Printable(e.name), e.cases, plural(e.cases, "case", "cases"), e.k, plural(e.k, "run", "runs")))
		v.last = v.now()
	case "run":
		e := v.find(ev.Eval)
		if e == nil {
			return
		}
		e.runs++
		if !ev.Pass {
			e.failed++
		}
		e.tokens += ev.Tokens
		e.cost += ev.Cost
		v.changed = true
	case "end":
		e := v.find(ev.Eval)
		if e == nil {
			return
		}
		e.end = &ev
		s := v.status(e) + ", done"
		if ev.Stopped != "" {
			s += ", stopped: " + ev.Stopped
		}
		if ev.Error != "" {
			s += ", error: " + ev.Error
		}
		v.line(showtext.Printable(s))
		v.last = v.now()
	}
	if v.tty {
		v.draw()
	}
}

// tick is called periodically: the bar's clock moves, and a plain line
// is due every v.every while runs end.
func (v *progressView) tick() {
	if v.tty {
		v.draw()
		return
	}
	e := v.live()
	if e == nil || !v.changed || v.now().Sub(v.last) < v.every {
		return
	}
	fmt.Fprintln(v.w, showtext.Printable(v.status(e)))
	v.last, v.changed = v.now(), false
}

// done clears the bar.
func (v *progressView) done() {
	if v.bar {
		fmt.Fprint(v.w, "\r\x1b[K")
		v.bar = false
	}
}

// line writes s on a line of its own, the bar (if any) cleared first.
func (v *progressView) line(s string) {
	v.done()
	fmt.Fprintln(v.w, s)
}

// draw draws the live eval's bar over the current line.
func (v *progressView) draw() {
	e := v.live()
	var line []rune
	switch {
	case e != nil:
		total := max(e.cases*e.k, 1)
		const width = 16
		full := min(width*e.runs/total, width)
		name := []rune(showtext.Printable(e.name))
		if len(name) > 16 {
			name = append(name[:15], '…')
		}
		line = []rune(fmt.Sprintf("%s %s%s %s", string(name), strings.Repeat("█", full), strings.Repeat("░", width-full), v.counts(e)))
	case len(v.evals) == 0 && v.waiting != "": // go test builds, or runs other tests
		line = []rune(fmt.Sprintf("%s … %s", showtext.Printable(v.waiting), round(v.now().Sub(v.created))))
	default:
		v.done()
		return
	}
	if len(line) > maxBar { // a line the terminal wraps is not redrawn in place
		line = line[:maxBar]
	}
	if v.bar && string(line) == v.drawn {
		return
	}
	v.drawn = string(line)
	fmt.Fprintf(v.w, "\r\x1b[K%s", v.drawn)
	v.bar = true
}

// maxBar is the most characters of the bar's line: less than the 80
// columns of the narrowest terminal.
const maxBar = 79

// status is a line of the eval's progress.
func (v *progressView) status(e *evalProgress) string {
	return fmt.Sprintf("eval %s: %s", e.name, v.counts(e))
}

func (v *progressView) counts(e *evalProgress) string {
	s := fmt.Sprintf("%d/%d runs, %d failed", e.runs, e.cases*e.k, e.failed)
	elapsed := v.now().Sub(e.start)
	if e.end != nil {
		elapsed = time.Duration(e.end.LatencyMS * float64(time.Millisecond))
	}
	return s + fmt.Sprintf(", %s tokens, $%.4f, %s", count(e.tokens), e.cost, round(elapsed))
}

// round rounds d for a progress line: to 10ms under a second, to 100ms
// above.
func round(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

// count writes n shortly: 950, 1.2k, 3.4M.
func count(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprintf("%.1fM", float64(n)/1e6)
}

// isTerminal reports whether w is a terminal that takes control
// sequences: a character device, TERM not "dumb".
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// printableOutput is showtext.Printable for each line of a program's
// output, its tabs kept (a stack trace's indentation).
func printableOutput(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		parts := strings.Split(l, "\t")
		for j, p := range parts {
			parts[j] = showtext.Printable(p)
		}
		lines[i] = strings.Join(parts, "\t")
	}
	return strings.Join(lines, "\n") + "\n"
}
