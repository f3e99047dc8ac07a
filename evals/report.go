package evals

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"
)

// ReportVersion is the version of the report's JSON form; ReadReport
// refuses another.
const ReportVersion = 1

// Report is what an eval measured: the figures of each case, in dataset
// order whatever the concurrency, and overall. Its JSON form is the result
// file that Run writes and ReadReport reads, the baseline of a later run
// (see Compare).
type Report struct {
	Version int    `json:"version"`
	Eval    string `json:"eval"`
	// K is the runs a case; PassK the k of pass@k and pass^k.
	K     int `json:"k"`
	PassK int `json:"pass_k"`
	// Started is when the eval started (UTC), ElapsedMS how long it took.
	Started   time.Time `json:"started"`
	ElapsedMS float64   `json:"elapsed_ms"`
	// Stopped says why the eval stopped before every case ran K times:
	// "tokens budget", "cost budget", "time budget" or "cancelled"; ""
	// when it ran them all.
	Stopped string       `json:"stopped,omitempty"`
	Cases   []CaseResult `json:"cases"`
	// Overall are the figures of every run; its pass rates are the means
	// of the cases' (those with a run).
	Overall Figures `json:"overall"`
}

// Case returns the result of the case named name, nil if there is none.
func (r *Report) Case(name string) *CaseResult {
	for i := range r.Cases {
		if r.Cases[i].Name == name {
			return &r.Cases[i]
		}
	}
	return nil
}

// ReadReport reads a report written by Run (or WriteFile), its cases'
// runs included. A file that is not one (another version, a k below 1, a
// pass_k outside 1 to k, a case with more runs than k, or a run numbered
// outside 0 to k-1 or twice) is an error that names the file and what is
// wrong.
func ReadReport(path string) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r Report
	if err := json.NewDecoder(bufio.NewReader(f)).Decode(&r); err != nil {
		return nil, fmt.Errorf("read report %s: %w", path, err)
	}
	if r.Version != ReportVersion {
		return nil, fmt.Errorf("read report %s: version %d, this program reads version %d", path, r.Version, ReportVersion)
	}
	if err := r.consistent(); err != nil {
		return nil, fmt.Errorf("read report %s: %w", path, err)
	}
	return &r, nil
}

// consistent reports what makes r a report that Run could not have
// written: its k and pass_k, and each case's runs.
func (r *Report) consistent() error {
	if r.K < 1 {
		return fmt.Errorf("k %d: a case runs at least once", r.K)
	}
	if r.PassK < 1 || r.PassK > r.K {
		return fmt.Errorf("pass_k %d: not from 1 to k (%d)", r.PassK, r.K)
	}
	for i := range r.Cases {
		c := &r.Cases[i]
		if len(c.Runs) > r.K {
			return fmt.Errorf("case %q: %d runs, more than k (%d)", c.Name, len(c.Runs), r.K)
		}
		seen := make(map[int]bool, len(c.Runs))
		for _, run := range c.Runs {
			if run.Run < 0 || run.Run >= r.K {
				return fmt.Errorf("case %q: run %d, not from 0 to k-1 (%d)", c.Name, run.Run, r.K-1)
			}
			if seen[run.Run] {
				return fmt.Errorf("case %q: run %d twice", c.Name, run.Run)
			}
			seen[run.Run] = true
		}
	}
	return nil
}

// WriteFile writes r to path as JSON, as Run writes it: a baseline.
func (r *Report) WriteFile(path string) error {
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// WriteTable writes r as a table, a case a line, then the overall figures:
// runs passed, pass@1, pass@k, pass^k, and the mean and p95 of steps,
// uncached input tokens, cache reads, cost and latency.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "case\tpassed\tpass@1\tpass@%d\tpass^%d\tsteps\tinput\tcache read\tcost $\tlatency ms\t\n", r.PassK, r.PassK)
	row := func(name string, f Figures) {
		fmt.Fprintf(tw, "%s\t%d/%d\t%.3f\t%.3f\t%.3f\t%s\t%s\t%s\t%s\t%s\t\n", name, f.Passed, f.Runs, f.PassAt1, f.PassAtK, f.PassHatK,
			pair(f.Steps, "%.1f"), pair(f.InputTokens, "%.0f"), pair(f.CacheRead, "%.0f"), pair(f.Cost, "%.4f"), pair(f.LatencyMS, "%.1f"))
	}
	for _, c := range r.Cases {
		row(c.Name, c.Figures)
	}
	row("overall", r.Overall)
	if r.Stopped != "" {
		fmt.Fprintf(tw, "stopped: %s\t\n", r.Stopped)
	}
	return tw.Flush()
}

// pair writes a Stat as "mean/p95".
func pair(s Stat, f string) string { return fmt.Sprintf(f+"/"+f, s.Mean, s.P95) }

// stream writes a report as Run makes it: the header fields, the cases one
// by one, the overall figures last. Its JSON is one object, which
// encoding/json reads whole (ReadReport). The cases are appended to one
// buffer, written to w once it holds streamChunk bytes: no copy into a
// second buffer, and memory that does not grow with the cases.
type stream struct {
	w     io.Writer
	buf   []byte
	cases int
}

// streamChunk is how much a stream buffers before it writes.
const streamChunk = 64 << 10

func newStream(w io.Writer) *stream {
	if w == nil {
		return nil
	}
	return &stream{w: w, buf: make([]byte, 0, streamChunk+streamChunk/2)}
}

func (s *stream) header(r *Report) error {
	if s == nil {
		return nil
	}
	b, err := json.Marshal(struct {
		Version int       `json:"version"`
		Eval    string    `json:"eval"`
		K       int       `json:"k"`
		PassK   int       `json:"pass_k"`
		Started time.Time `json:"started"`
	}{r.Version, r.Eval, r.K, r.PassK, r.Started})
	if err != nil {
		return err
	}
	s.buf = append(s.buf, b[:len(b)-1]...)
	s.buf = append(s.buf, `,"cases":[`...)
	return nil
}

func (s *stream) caseResult(c *CaseResult) error {
	if s == nil {
		return nil
	}
	if s.cases > 0 {
		s.buf = append(s.buf, ',')
	}
	s.cases++
	s.buf = append(s.buf, '\n')
	var err error
	if s.buf, err = appendCase(s.buf, c); err != nil {
		return err
	}
	if len(s.buf) < streamChunk {
		return nil
	}
	return s.flush()
}

// flush writes what s holds.
func (s *stream) flush() error {
	_, err := s.w.Write(s.buf)
	s.buf = s.buf[:0]
	return err
}

func (s *stream) trailer(r *Report) error {
	if s == nil {
		return nil
	}
	b, err := json.Marshal(struct {
		ElapsedMS float64 `json:"elapsed_ms"`
		Stopped   string  `json:"stopped,omitempty"`
		Overall   Figures `json:"overall"`
	}{r.ElapsedMS, r.Stopped, r.Overall})
	if err != nil {
		return err
	}
	s.buf = append(s.buf, "\n],"...)
	s.buf = append(s.buf, b[1:]...)
	s.buf = append(s.buf, '\n')
	return s.flush()
}
