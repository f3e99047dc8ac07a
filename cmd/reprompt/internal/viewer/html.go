package viewer

import (
	"bytes"
	"compress/gzip"
	_ "embed" // the page's template, style and script
	"encoding/base64"
	"encoding/json"
	"html"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

var (
	//go:embed assets/viewer.html
	pageHTML string
	//go:embed assets/viewer.css
	pageCSS string
	//go:embed assets/viewer.js
	pageJS string
)

// HTML writes run as one self-contained HTML page: the run as JSON, and
// the style and script that render it (a chart of input tokens per step,
// split into cached prefix and new tokens, with commits and compactions
// marked; a timeline of the steps; the selected step's effects, request
// changes, reply, tool calls, state changes and sub-agents). The page loads
// nothing else.
func HTML(w io.Writer, run *Run) error { return HTMLWith(w, run, HTMLOptions{}) }

// HTMLOptions configure HTMLWith.
type HTMLOptions struct {
	// Follow is the URL, relative to the page's, that a page served while
	// the run goes on reads every second to show new steps and turns
	// without a reload: it is given "from" (the index of the first step
	// the page wants, its last one, which may have changed) and "v" (the
	// version the page has), and answers with the JSON of WriteUpdate, or
	// 204 No Content when nothing changed. Empty (the default): the page
	// shows the run as written and reads nothing.
	Follow string
}

// HTMLWith writes run as HTML does, with opts.
func HTMLWith(w io.Writer, run *Run, opts HTMLOptions) error {
	data, enc, err := encodeData(summaryOf(run))
	if err != nil {
		return err
	}
	detail, denc, err := encodeData(detailOf(run))
	if err != nil {
		return err
	}
	var b bytes.Buffer
	b.Grow(len(pageHTML) + len(pageCSS) + len(pageJS) + len(data) + len(detail))
	rest := pageHTML
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i])
		rest = rest[i:]
		j := strings.Index(rest, "}}")
		switch rest[:j+2] {
		case "{{TITLE}}":
			b.WriteString(html.EscapeString(run.Title))
		case "{{FOLLOW}}":
			b.WriteString(html.EscapeString(opts.Follow))
		case "{{CSS}}":
			b.WriteString(pageCSS)
		case "{{JS}}":
			b.WriteString(pageJS)
		case "{{ENCODING}}":
			b.WriteString(enc)
		case "{{DATA}}":
			b.Write(data)
		case "{{DETAIL_ENCODING}}":
			b.WriteString(denc)
		case "{{DETAIL}}":
			b.Write(detail)
		default:
			b.WriteString(rest[:j+2])
		}
		rest = rest[j+2:]
	}
	_, err = w.Write(b.Bytes())
	return err
}

// encodeData returns v as JSON, or gzipped in base64 when the JSON is
// larger than compressAbove, and the encoding's name for the page.
func encodeData(v any) ([]byte, string, error) {
	data, err := json.Marshal(v) // escapes <, > and &: safe inside <script>
	if err != nil {
		return nil, "", err
	}
	if len(data) <= compressAbove {
		return data, "json", nil
	}
	// A long run's data, gzipped and in base64: a page several times
	// smaller, which the browser reads that much faster.
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestSpeed)
	zw.Write(data)
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return []byte(base64.StdEncoding.EncodeToString(z.Bytes())), "gzip-base64", nil
}

// compressAbove is the size of the data above which a page holds it
// gzipped: below it the data stays readable JSON.
const compressAbove = 512 << 10

// summary is what the page draws first, before it reads the rest: the
// run's title and notes, and per step what the chart and the timeline show.
type summary struct {
	Title  string   `json:"title"`
	Source string   `json:"source"`
	Notes  []string `json:"notes,omitempty"`
	Done   bool     `json:"done"`
	Error  string   `json:"error,omitempty"`
	// Turns reports a conversation: the timeline groups the steps by turn.
	Turns bool          `json:"turns,omitempty"`
	Steps []stepSummary `json:"steps"`
}

type stepSummary struct {
	N          int    `json:"n"`
	Input      int    `json:"input,omitempty"`
	Prefix     int    `json:"prefix,omitempty"`
	Commit     bool   `json:"commit,omitempty"`
	Compaction bool   `json:"compaction,omitempty"`
	Damage     bool   `json:"damage,omitempty"`
	What       string `json:"what,omitempty"` // the tools called, "answer", or the step's label
	Turn       int    `json:"turn,omitempty"`
	TurnStart  bool   `json:"turn_start,omitempty"`
	User       string `json:"user,omitempty"` // the turn's message, shortened, on the first step of a turn
	Sent       int    `json:"sent,omitempty"` // how many messages were sent while the run went on
	Asks       int    `json:"asks,omitempty"`
	// Stopped and Resumed are the step's (Step.Mark): the timeline tags
	// a step a crash or a stop cut short.
	Stopped string `json:"stopped,omitempty"`
	Resumed bool   `json:"resumed,omitempty"`
	// Cache is the provider's input as [input, cache read, cache write],
	// when it reported reads or writes: the chart shows that split.
	Cache []int `json:"cache,omitempty"`
	// Miss is why the request's prefix broke (Step.CacheMiss): the
	// timeline marks the step.
	Miss string `json:"miss,omitempty"`
}

// userShown is the most bytes of a turn's message the timeline shows.
const userShown = 160

func summaryOf(run *Run) *summary {
	sm := &summary{Title: run.Title, Source: run.Source, Notes: run.Notes, Done: run.Done, Error: run.Error, Turns: run.Conversation()}
	sm.Steps = stepSummaries(run.Steps)
	return sm
}

func stepSummaries(steps []*Step) []stepSummary {
	out := make([]stepSummary, len(steps))
	for i, s := range steps {
		ss := stepSummary{N: s.Number, Input: s.InputTokens, Prefix: s.PrefixTokens, Commit: len(s.Commits) > 0, Compaction: s.Compaction, Damage: s.Damage != "",
			Turn: s.Turn, TurnStart: s.TurnStart, Sent: len(s.Steering()), Asks: len(s.Asks), Stopped: s.Stopped, Resumed: s.Resumed, Miss: s.CacheMiss}
		if s.TurnStart && len(s.Sent) > 0 {
			ss.User = shorten(s.Sent[0], userShown)
		}
		if s.Record != nil {
			if u := s.Record.Usage; u.CachedTokens > 0 || u.CacheWriteTokens > 0 {
				ss.Cache = []int{u.InputTokens, u.CachedTokens, u.CacheWriteTokens}
			}
		}
		switch {
		case s.Label != "":
			ss.What = s.Label
		case len(s.Calls) > 0:
			names := make([]string, len(s.Calls))
			for j, c := range s.Calls {
				names[j] = c.Name
			}
			ss.What = strings.Join(names, ", ")
		case s.Reply >= 0:
			ss.What = "answer"
		}
		out[i] = ss
	}
	return out
}

// shorten returns s cut to at most n bytes, on a rune boundary, with "…"
// when cut, and its line breaks as spaces.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// detail is what the page reads once it has drawn the timeline: the steps
// in full and the messages they refer to. Each top-level step's state is
// given as the keys it set and removed, not the whole state again (the
// script rebuilds the state of a step from those of the steps before it),
// so that a long run whose state holds large values does not repeat them
// at every step; a tool call's result that is a message of the pool is
// given by its index.
type detail struct {
	Steps    []pageStep `json:"steps"`
	Messages []Message  `json:"messages"`
}

type pageStep struct {
	*Step
	// The page shows how many messages the request has, not which: the
	// diff names those it shows. A long run's requests repeat its history
	// at every step.
	Request  *struct{}         `json:"request,omitempty"` // nil: hides Step.Request
	RequestN *int              `json:"request_n,omitempty"`
	State    *struct{}         `json:"state,omitempty"`   // nil: hides Step.State
	Changes  *struct{}         `json:"changes,omitempty"` // nil: hides Step.Changes
	HasState bool              `json:"has_state,omitempty"`
	Set      map[string]string `json:"set,omitempty"`
	Del      []string          `json:"del,omitempty"`
	Calls    []pageCall        `json:"calls,omitempty"`
}

// pageCall is a tool call whose result, when it is a message of the pool,
// is given by its index (Res) rather than repeated.
type pageCall struct {
	ToolCall
	Result *string `json:"result,omitempty"` // nil when Res is set: hides ToolCall.Result
	Res    *int    `json:"res,omitempty"`
}

func detailOf(run *Run) *detail {
	p := &detail{Messages: run.Messages, Steps: make([]pageStep, len(run.Steps))}
	if p.Messages == nil {
		p.Messages = []Message{}
	}
	var prev map[string]string
	for i, s := range run.Steps {
		ps := pageStep{Step: s, HasState: s.State != nil}
		if s.Request != nil {
			n := len(s.Request)
			ps.RequestN = &n
		}
		for _, c := range s.Calls {
			pc := pageCall{ToolCall: c}
			if c.resultMsg > 0 {
				i := c.resultMsg - 1
				pc.Res = &i
			} else {
				pc.Result = &c.Result
			}
			ps.Calls = append(ps.Calls, pc)
		}
		if s.State == nil {
			// Unknown (a damaged step): the next step sets its whole state.
			prev = nil
			p.Steps[i] = ps
			continue
		}
		if prev == nil {
			ps.Del = []string{"*"} // start from an empty state
		}
		for k, v := range s.State {
			if old, ok := prev[k]; !ok || old != v {
				if ps.Set == nil {
					ps.Set = map[string]string{}
				}
				ps.Set[k] = v
			}
		}
		for k := range prev {
			if _, ok := s.State[k]; !ok {
				ps.Del = append(ps.Del, k)
			}
		}
		slices.Sort(ps.Del)
		prev = s.State
		p.Steps[i] = ps
	}
	return p
}

// Update is what a page that follows a run (HTMLOptions.Follow) reads to
// catch up: the run's header, its steps from From on (the page replaces
// its own from there), and the messages they added to the pool. The pool
// is built in step order, so that its first MessagesFrom messages, those
// the steps before From refer to, are the page's already.
type Update struct {
	Version string   `json:"version"`
	Title   string   `json:"title"`
	Source  string   `json:"source"`
	Notes   []string `json:"notes,omitempty"`
	Done    bool     `json:"done"`
	Error   string   `json:"error,omitempty"`
	Turns   bool     `json:"turns,omitempty"`
	From    int      `json:"from"`
	// Steps are the summaries of the steps from From on, and Detail the
	// same steps in full, as the page holds them.
	Steps        []stepSummary `json:"steps"`
	Detail       []pageStep    `json:"detail"`
	MessagesFrom int           `json:"messages_from"`
	Messages     []Message     `json:"messages"`
}

// WriteUpdate writes, as JSON, the Update of run from step index from
// (clamped to the run's steps), for a page that has the steps before it;
// version identifies what run was read from, for the page to send back.
func WriteUpdate(w io.Writer, run *Run, from int, version string) error {
	from = max(0, min(from, len(run.Steps)))
	d := detailOf(run)
	u := &Update{Version: version, Title: run.Title, Source: run.Source, Notes: run.Notes, Done: run.Done, Error: run.Error,
		Turns: run.Conversation(), From: from, Steps: stepSummaries(run.Steps[from:]), Detail: d.Steps[from:]}
	for _, s := range run.Steps[:from] {
		u.MessagesFrom = max(u.MessagesFrom, 1+maxRef(s))
	}
	u.MessagesFrom = min(u.MessagesFrom, len(run.Messages))
	u.Messages = run.Messages[u.MessagesFrom:]
	return json.NewEncoder(w).Encode(u)
}

// maxRef returns the highest pool index s refers to, -1 for none. The pool
// grows in step order: every message a step added is one it refers to.
func maxRef(s *Step) int {
	m := s.Reply
	for _, i := range s.Request {
		m = max(m, i)
	}
	for _, i := range s.Diff.Removed {
		m = max(m, i)
	}
	for _, c := range s.Calls {
		m = max(m, c.resultMsg-1)
	}
	for _, a := range s.Agents {
		for _, sub := range a.Steps {
			m = max(m, maxRef(sub))
		}
	}
	return m
}
