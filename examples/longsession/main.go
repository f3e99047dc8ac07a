// Command longsession simulates a long coding-agent session offline — a
// seeded model reading files of 2 to 8 KB, running tests with long outputs
// and failures, writing files, calling tools in parallel and answering
// summary requests — under a 32k-token window (4k of it reserved for the
// reply), once per context strategy.
//
// For each strategy and each price model (a meter, below) it prints one
// line ending with
//
//	over_window=N pairing_errors=N recall=R prefix_reuse=R cache_read=R billed_input=T
//
// where over_window counts requests larger than what may be sent (the
// window minus the output reserve), pairing_errors requests with a tool call
// and its result separated, recall the share of tool results whose full
// content was in at least one request before it was trimmed or summarised
// away (so that a strategy cannot look cheaper by dropping results the
// model never read), prefix_reuse the share of input tokens that repeat the
// previous request's prefix (what a provider's prompt cache can serve),
// cache_read the share of the agent's input tokens the meter bills as
// cache reads, and billed_input the input tokens billed, in fresh-token
// equivalents: the agent's requests and the summarising calls' (whose
// input is summary_input), their cache reads at the meter's read price and
// the rest at its write price (every token not read from the cache is
// written to it). A summarising call reads what it shares with the
// agent's previous request, as the meter counts it (summary_read is that
// share of summary_input): nothing for a summary asked with a system
// prompt of its own, most of it for one that continues the agent's
// request (builtin.CompactConfig.Continue). Each line but the baseline's gives
// its billed input as a share of the baseline's under the same meter. It
// exits 1 if any request of any strategy went over the window or broke
// pairing.
//
// The meters (-meters, a comma-separated list of kind:read:write, the
// prices as shares of the fresh input price):
//
//   - openai: OpenAI-like, the whole prefix shared with the previous
//     request is a cache read (openai:0.1:1 is OpenAI's price list, where a
//     write costs what the input costs; openai:0.1:1.25 its newest models').
//   - anthropic: Anthropic-like, where only what the breakpoints of
//     providers/anthropic cover is cacheable: a request reads the prefix up
//     to its last breakpoint that the previous request also had, with the
//     same bytes before it; every token past it is written
//     (anthropic:0.1:1.25 is Anthropic's 5-minute cache). The breakpoints
//     are the adapter's: after tools and system; where the previous
//     request had one that this one repeats (llm.Request.Repeated), else
//     at the end of the previous step's request; at the end of the
//     committed part (llm.Request.Committed, what the effects declared
//     they will not rewrite before the next step); at the end of the
//     transcript.
//
// -cached P,Q is a shorthand for openai:P:1,openai:Q:1.
//
// The strategies: baseline trims the results older than the four most
// recent at every step (the boundary moves at every step, as seed 000's
// effect does; it declares nothing of its rewrites) and compacts with
// builtin.Compact's defaults (a summary by the model, asked apart, above
// 0.8 of what may be sent); default is builtin.Defaults for
// a profile that knows the window, the reserve and the meter's read and
// write prices (it compacts earlier the dearer cached input is, so it is
// simulated once per pair of prices); window, truncate and heuristic are
// the rule-based compactions, with no model call, at Compact's defaults.
//
// The simulated model draws its actions and its summaries from two
// separate random streams, so every strategy sees the same session.
//
// With -toggle-tool N, the grep tool is disabled for N steps every 2N steps
// (steps N to 2N-1, 3N to 4N-1, …), as an agent that withdraws a tool for a
// phase of its work would; the model calls it anyway at times, and gets an
// error result. With -stable-tools, the runtime keeps the disabled tool in
// the request's tool list (runtime.Config.StableTools), so that the tool
// list, and the cached prefix behind it, does not change when it comes and
// goes.
//
//	go run ./examples/longsession [-steps 320] [-seed 1] [-meters openai:0.1:1,openai:0.5:1,openai:0.1:1.25,anthropic:0.1:1.25] [-toggle-tool 0] [-stable-tools]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/effects/builtin"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/sqlite"
	"github.com/reprompt/reprompt/tokens"
)

const (
	window  = 32768
	reserve = 4096
	// sendable is the most a request may hold: the window minus the part
	// kept for the reply.
	sendable = window - reserve
)

func main() {
	steps := flag.Int("steps", 320, "model calls per session")
	seed := flag.Uint64("seed", 1, "seed of the simulated model")
	meterList := flag.String("meters", defaultMeters, "price models to bill with, comma-separated kind:read:write (kind openai or anthropic, prices as shares of the fresh input price)")
	cached := flag.String("cached", "", "shorthand for -meters openai:P:1 for each of these comma-separated cached-input prices")
	only := flag.String("only", "", "simulate only this strategy (baseline, default, window, heuristic, truncate)")
	toggle := flag.Int("toggle-tool", 0, "disable the grep tool for this many steps every twice as many steps (0: never)")
	stable := flag.Bool("stable-tools", false, "keep the disabled tool in the request's tool list (runtime.Config.StableTools)")
	storePath := flag.String("store", "", "SQLite file to save each session in (one per strategy and price, named like \"default-0.1\"), for reprompt view")
	flag.Parse()
	if *storePath != "" {
		st, err := sqlite.Open(*storePath)
		if err != nil {
			fmt.Fprintf(os.Stderr, "-store: %v\n", err)
			os.Exit(2)
		}
		defer st.Close()
		store = st
	}
	meters, err := parseMeters(*meterList)
	if err != nil {
		fmt.Fprintf(os.Stderr, "-meters: %v\n", err)
		os.Exit(2)
	}
	if *cached != "" {
		prices, err := parsePrices(*cached)
		if err != nil {
			fmt.Fprintf(os.Stderr, "-cached: %v\n", err)
			os.Exit(2)
		}
		meters = meters[:0]
		for _, p := range prices {
			meters = append(meters, meter{kind: "openai", read: p, write: 1})
		}
	}
	onlyStrategy = *only
	if *toggle < 0 {
		fmt.Fprintf(os.Stderr, "-toggle-tool: want a number of steps >= 0, got %d\n", *toggle)
		os.Exit(2)
	}
	toggleTool, stableTools = *toggle, *stable
	if *only != "" && !slices.ContainsFunc(strategies(), func(s strategy) bool { return s.name == *only }) {
		fmt.Fprintf(os.Stderr, "-only: no strategy %q\n", *only)
		os.Exit(2)
	}
	rows, err := run(*steps, *seed, meters)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	failed := false
	for _, r := range rows {
		fmt.Println(r)
		if r.m.overWindow > 0 || r.m.pairing > 0 {
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

func parsePrices(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		p, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || p < 0 || p > 1 {
			return nil, fmt.Errorf("want fractions between 0 and 1, got %q", f)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, errors.New("no price")
	}
	return out, nil
}

// defaultMeters are the meters -meters bills with unless told otherwise.
const defaultMeters = "openai:0.1:1,openai:0.5:1,openai:0.1:1.25,anthropic:0.1:1.25"

// meter is a price model: how a provider splits a request's input into
// cache reads and cache writes, and what it bills for each, as shares of
// the fresh input price.
type meter struct {
	// kind is "openai" (the whole prefix shared with the previous request
	// is read from the cache) or "anthropic" (only the prefix up to a
	// breakpoint the previous request also had).
	kind        string
	read, write float64
}

func (mt meter) String() string { return fmt.Sprintf("%s:%g:%g", mt.kind, mt.read, mt.write) }

// breakpoints reports that only what the adapter's breakpoints cover is
// cacheable.
func (mt meter) breakpoints() bool { return mt.kind == "anthropic" }

func parseMeters(s string) ([]meter, error) {
	var out []meter
	for _, f := range strings.Split(s, ",") {
		parts := strings.Split(strings.TrimSpace(f), ":")
		if len(parts) != 3 || (parts[0] != "openai" && parts[0] != "anthropic") {
			return nil, fmt.Errorf("want kind:read:write with kind openai or anthropic, got %q", f)
		}
		read, err := strconv.ParseFloat(parts[1], 64)
		if err != nil || read < 0 || read > 1 {
			return nil, fmt.Errorf("%q: want a read price between 0 and 1", f)
		}
		write, err := strconv.ParseFloat(parts[2], 64)
		if err != nil || write < 1 || write > 4 {
			return nil, fmt.Errorf("%q: want a write price between 1 and 4", f)
		}
		out = append(out, meter{kind: parts[0], read: read, write: write})
	}
	return out, nil
}

// row is one strategy's figures under one meter.
type row struct {
	name     string
	meter    meter
	m        metrics
	baseline float64 // the baseline's billed input under the same meter
}

func (r row) billed() float64 { return r.m.billed(r.meter) }

func (r row) String() string {
	rel := ""
	if r.name != "baseline" && r.baseline > 0 {
		rel = fmt.Sprintf(" (%.2f of baseline)", r.billed()/r.baseline)
	}
	m := r.m
	sread := 0.0
	if m.summaryInput > 0 {
		sread = float64(m.summaryRead(r.meter)) / float64(m.summaryInput)
	}
	return fmt.Sprintf("%-9s meter=%s steps=%d rewrites=%d summaries=%d summary_input=%d summary_read=%.3f avg_request=%d max_request=%d%s over_window=%d pairing_errors=%d recall=%.3f prefix_reuse=%.3f cache_read=%.3f billed_input=%.0f",
		r.name, r.meter, m.steps, m.rewrites, m.summaries, m.summaryInput, sread, m.input/max(m.steps, 1), m.maxInput, rel,
		m.overWindow, m.pairing, m.recall(), m.reuse(), m.readShare(r.meter), r.billed())
}

// run simulates every strategy on one seed and returns a row per strategy
// and meter, the strategies in the order of strategies(), the meters in the
// order given. A strategy that does not depend on the prices is simulated
// once and billed under each meter; one that does, once per pair of read
// and write prices.
func run(steps int, seed uint64, meters []meter) ([]row, error) {
	var rows []row
	base := map[meter]float64{}
	for _, st := range strategies() {
		if onlyStrategy != "" && st.name != onlyStrategy {
			continue
		}
		sims := map[prices]metrics{}
		for _, mt := range meters {
			key := prices{mt.read, mt.write}
			if !st.priced {
				key = prices{}
			}
			m, ok := sims[key]
			if !ok {
				var err error
				id := fmt.Sprintf("%s-%g", st.name, mt.read)
				if mt.write != 1 {
					id += fmt.Sprintf("-w%g", mt.write)
				}
				if m, err = simulate(st.register(mt.read, mt.write), steps, seed, mt.read, id); err != nil {
					return nil, fmt.Errorf("%s (seed %d, meter %s): %w", st.name, seed, mt, err)
				}
				sims[key] = m
			}
			if st.name == "baseline" {
				base[mt] = m.billed(mt)
			}
			rows = append(rows, row{name: st.name, meter: mt, m: m, baseline: base[mt]})
		}
	}
	return rows, nil
}

// prices are the read and write prices a priced strategy is simulated at.
type prices struct{ read, write float64 }

type strategy struct {
	name string
	// priced reports that the strategy's effects depend on the cache's
	// read and write prices.
	priced bool
	// register returns what declares the strategy's effects in the prompt
	// function, for one session at the cache's read and write prices.
	register func(read, write float64) func(p *prompt.Prompt)
}

func strategies() []strategy {
	return []strategy{
		{"baseline", false, func(_, _ float64) func(p *prompt.Prompt) {
			// Seed 000's trimming: every step, results older than the four
			// most recent tool messages are cut, so the boundary moves at
			// every step; compaction at Compact's defaults.
			trim := movingTrim(4, 500)
			compact := builtin.Compact(builtin.CompactConfig{Window: window, Reserve: reserve})
			return func(p *prompt.Prompt) {
				p.Effect(effects.Always, trim, effects.InPhase(effects.AfterReply), effects.Key("baseline.trim"))
				p.Effect(effects.Always, compact, effects.Recovery(), effects.Key("baseline.compact"))
			}
		}},
		{"default", true, func(read, write float64) func(p *prompt.Prompt) {
			cfg := builtin.Defaults(builtin.Profile{Window: window, OutputReserve: reserve, CachedInputFraction: read, CacheWriteFraction: write})
			return func(p *prompt.Prompt) { cfg.Register(p) }
		}},
		{"window", false, func(_, _ float64) func(p *prompt.Prompt) {
			trim := builtin.TrimToolResults(builtin.TrimConfig{})
			compact := builtin.Compact(builtin.CompactConfig{Window: window, Reserve: reserve, Strategy: builtin.StrategyWindow})
			return func(p *prompt.Prompt) {
				p.Effect(effects.Always, trim, effects.InPhase(effects.AfterReply), effects.Key("trim"))
				p.Effect(effects.Always, compact, effects.Recovery(), effects.Key("compact"))
			}
		}},
		{"heuristic", false, func(_, _ float64) func(p *prompt.Prompt) {
			trim := builtin.TrimToolResults(builtin.TrimConfig{PreserveTurns: 1, Batch: 1, MaxResultLength: 600})
			compact := builtin.Compact(builtin.CompactConfig{Window: window, Reserve: reserve, Strategy: builtin.StrategyHeuristic})
			return func(p *prompt.Prompt) {
				p.Effect(effects.Always, trim, effects.InPhase(effects.AfterReply), effects.Key("trim"))
				p.Effect(effects.Always, compact, effects.Recovery(), effects.Key("compact"))
			}
		}},
		{"truncate", false, func(_, _ float64) func(p *prompt.Prompt) {
			trim := builtin.TrimToolResults(builtin.TrimConfig{})
			compact := builtin.Compact(builtin.CompactConfig{Window: window, Reserve: reserve, Strategy: builtin.StrategyTruncate})
			return func(p *prompt.Prompt) {
				p.Effect(effects.Always, trim, effects.InPhase(effects.AfterReply), effects.Key("trim"))
				p.Effect(effects.Always, compact, effects.Recovery(), effects.Key("compact"))
			}
		}},
	}
}

// movingTrim is the baseline trimming: at every step, every tool result but
// the keep most recent is cut to max bytes, marked, and committed.
func movingTrim(keep, max int) effects.Func {
	return func(ctx context.Context, s *effects.Step) error {
		msgs := s.Transcript()
		seen, changed := 0, false
		out := msgs
		for i := len(msgs) - 1; i >= 0; i-- {
			m := msgs[i]
			if m.Role != defs.RoleTool {
				continue
			}
			seen++
			if seen <= keep || m.IsError || m.Meta["trimmed"] != "" || len(m.Content) <= max {
				continue
			}
			if !changed {
				out = append([]defs.Message(nil), msgs...)
				changed = true
			}
			m.Content = m.Content[:max] + "\n[trimmed]"
			m.Meta = map[string]string{"trimmed": "true"}
			out[i] = m
		}
		if changed {
			s.CommitMessages(out)
		}
		return nil
	}
}

type metrics struct {
	steps, overWindow, pairing, maxInput, rewrites int
	summaries, summaryInput                        int
	input, prefix                                  int
	// bpRead counts the input tokens an Anthropic-like meter reads from
	// the cache: the prefix up to the last breakpoint the previous request
	// also had (see tracker).
	bpRead int
	// summaryPrefix and summaryBpRead are the parts of summaryInput an
	// OpenAI-like and an Anthropic-like meter read from the cache: what a
	// summarising call shares with the agent's previous request (nothing,
	// unless it continues it, see builtin.CompactConfig.Continue).
	summaryPrefix, summaryBpRead int
	// results counts the tool results, recalled those whose full content
	// was in at least one request.
	results, recalled int
}

func (m metrics) reuse() float64 {
	if m.input == 0 {
		return 0
	}
	return float64(m.prefix) / float64(m.input)
}

// read returns the input tokens mt bills as cache reads.
func (m metrics) read(mt meter) int {
	if mt.breakpoints() {
		return m.bpRead
	}
	return m.prefix
}

// readShare returns the share of the agent's input mt bills as cache reads.
func (m metrics) readShare(mt meter) float64 {
	if m.input == 0 {
		return 0
	}
	return float64(m.read(mt)) / float64(m.input)
}

// summaryRead returns the summarising calls' input tokens mt bills as
// cache reads.
func (m metrics) summaryRead(mt meter) int {
	if mt.breakpoints() {
		return m.summaryBpRead
	}
	return m.summaryPrefix
}

// billed returns the input billed under mt in fresh-token equivalents: the
// agent's requests and the summarising calls', their cache reads at
// mt.read and the rest written to the cache at mt.write. A summarising
// call reads what it shares with the agent's previous request (a call
// that continues it) and nothing otherwise.
func (m metrics) billed(mt meter) float64 {
	r, sr := m.read(mt), m.summaryRead(mt)
	return mt.write*float64(m.input-r) + mt.read*float64(r) + mt.write*float64(m.summaryInput-sr) + mt.read*float64(sr)
}

func (m metrics) recall() float64 {
	if m.results == 0 {
		return 1
	}
	return float64(m.recalled) / float64(m.results)
}

// store, if set (-store), keeps the session of each simulation;
// onlyStrategy, if set (-only), names the one strategy to simulate;
// toggleTool, if positive (-toggle-tool), is the number of steps the grep
// tool is disabled for, every twice as many steps; stableTools
// (-stable-tools) sets runtime.Config.StableTools.
var (
	store        session.Store
	onlyStrategy string
	toggleTool   int
	stableTools  bool
)

func simulate(register func(p *prompt.Prompt), steps int, seed uint64, price float64, id string) (metrics, error) {
	var m metrics
	sim := newSim(steps, seed)
	agent := func(p *prompt.Prompt) error {
		sim.declare(p)
		register(p)
		return nil
	}
	cfg := runtime.Config{MaxSteps: steps + 10, Window: window, Reserve: reserve, Counter: sim.counter, CachedInputFraction: price, StableTools: stableTools}
	if store != nil {
		cfg.Store, cfg.SessionID = store, id
		if err := store.Delete(context.Background(), id); err != nil {
			return m, err
		}
	}
	r := runtime.New(sim, agent, cfg)
	tr := newTracker()
	for rec, err := range r.All(context.Background()) {
		if err != nil {
			return m, fmt.Errorf("step %d: %w", m.steps, err)
		}
		m.record(rec, tr)
	}
	m.summaries = sim.summaries
	return m, nil
}

// tracker is what record remembers from one step to the next.
type tracker struct {
	// unseen maps the call ID of each tool result whose full content was
	// in no request yet to that content.
	unseen map[string]string
	// prev is the previous step's request, nil if none; prevMarks are the
	// ends of its breakpoints, as counts of its messages (0: the one after
	// the tools and system prompt).
	prev      *llm.Request
	prevMarks []int
}

func newTracker() *tracker { return &tracker{unseen: map[string]string{}} }

// breakpoints returns where providers/anthropic places the cache
// breakpoints of req (its placeBreakpoints), as counts of messages before
// each: 0 after the tools and system prompt (if any); where the previous
// step's request had one that req repeats (req.Repeated), or else the
// messages before the last assistant message (the end of the previous
// step's request); the end of the committed part (req.Committed), if any;
// and all of them (the end of the transcript).
func breakpoints(req *llm.Request) []int {
	var marks []int
	if req.System != "" || len(req.Tools) > 0 {
		marks = append(marks, 0)
	}
	n := len(req.Messages)
	if req.Repeated > 0 {
		marks = append(marks, req.Repeated)
	} else {
		for i := n - 1; i > 0; i-- {
			if req.Messages[i].Role == defs.RoleAssistant {
				marks = append(marks, i)
				break
			}
		}
	}
	if req.Committed > 0 {
		marks = append(marks, req.Committed)
	}
	if n > 0 {
		marks = append(marks, n)
	}
	slices.Sort(marks)
	return slices.Compact(marks)
}

// cacheRead returns the tokens of req, whose count is input, an
// Anthropic-like provider reads from its cache: the prefix up to the last
// of req's breakpoints that prev, the previous request, also had, with the
// same tools, system prompt and messages before it. Everything past it is
// written to the cache (the last breakpoint closes the transcript).
func cacheRead(prev *llm.Request, prevMarks []int, req *llm.Request, input int) int {
	if prev == nil || prev.System != req.System || !slices.EqualFunc(prev.Tools, req.Tools, func(x, y llm.ToolSpec) bool {
		return x.Name == y.Name && x.Description == y.Description && string(x.Parameters) == string(y.Parameters)
	}) {
		return 0
	}
	same := 0
	for same < len(prev.Messages) && same < len(req.Messages) && sameMessage(prev.Messages[same], req.Messages[same]) {
		same++
	}
	best := -1
	for _, k := range breakpoints(req) {
		if k <= same && slices.Contains(prevMarks, k) {
			best = max(best, k)
		}
	}
	if best < 0 {
		return 0
	}
	msgs := 0
	for _, msg := range req.Messages {
		msgs += counter.Message(msg)
	}
	read := input - msgs // the tools and system prompt
	for _, msg := range req.Messages[:best] {
		read += counter.Message(msg)
	}
	return max(read, 0)
}

// sharedPrefix returns the tokens of req, whose count is input, that
// repeat the prefix of prev: its tools, system prompt and first messages.
func sharedPrefix(prev, req *llm.Request, input int) int {
	if prev == nil || prev.System != req.System || !slices.EqualFunc(prev.Tools, req.Tools, func(x, y llm.ToolSpec) bool {
		return x.Name == y.Name && x.Description == y.Description && string(x.Parameters) == string(y.Parameters)
	}) {
		return 0
	}
	n := input
	for i, msg := range req.Messages {
		if i >= len(prev.Messages) || !sameMessage(prev.Messages[i], msg) {
			n -= counter.Message(msg)
		}
	}
	return n
}

// requestTokens counts req as the runtime does: its system prompt, its
// tools and its messages.
func requestTokens(req *llm.Request) int {
	n := counter.Text(req.System)
	for _, t := range req.Tools {
		n += counter.Tool(t.Name, t.Description, t.Parameters)
	}
	for _, msg := range req.Messages {
		n += counter.Message(msg)
	}
	return n
}

func sameMessage(a, b defs.Message) bool {
	return a.Role == b.Role && a.Content == b.Content && a.ToolCallID == b.ToolCallID && a.Name == b.Name &&
		slices.EqualFunc(a.ToolCalls, b.ToolCalls, func(x, y defs.ToolCall) bool {
			return x.ID == y.ID && x.Name == y.Name && string(x.Arguments) == string(y.Arguments)
		})
}

// record adds a step's figures to m and remembers in tr what the next step
// compares with.
func (m *metrics) record(rec *runtime.Step, tr *tracker) {
	unseen := tr.unseen
	m.steps++
	if rec.Committed {
		m.rewrites++
	}
	if rec.InputTokens > sendable {
		m.overWindow++
	}
	m.maxInput = max(m.maxInput, rec.InputTokens)
	for _, sum := range rec.Summaries { // asked for before the step's request
		req := sum.Request
		in := requestTokens(req)
		m.summaryInput += in
		m.summaryPrefix += sharedPrefix(tr.prev, req, in)
		m.summaryBpRead += cacheRead(tr.prev, tr.prevMarks, req, in)
	}
	if req := rec.Request(); req != nil {
		if runtime.ValidateMessages(req.Messages) != nil {
			m.pairing++
		}
		for _, msg := range req.Messages {
			if full, ok := unseen[msg.ToolCallID]; ok && msg.Role == defs.RoleTool && msg.Content == full {
				delete(unseen, msg.ToolCallID)
				m.recalled++
			}
		}
		m.bpRead += cacheRead(tr.prev, tr.prevMarks, req, rec.InputTokens)
		tr.prev, tr.prevMarks = req, breakpoints(req)
	} else {
		tr.prev, tr.prevMarks = nil, nil
	}
	m.input += rec.InputTokens
	m.prefix += rec.PrefixTokens
	for _, res := range rec.ToolResults {
		unseen[res.CallID] = res.Content
		m.results++
	}
}

// memoCounter is an exact counter that remembers the count of every text
// it has seen (by its hash), so that recounting a transcript costs only its
// new texts, and the sessions of every strategy and seed share what was
// counted (a file read twice is counted once). The counts are the
// underlying counter's: a message counts its parts (tokens.MessageCount).
// It is safe for concurrent use.
type memoCounter struct {
	tokens.Counter
	seed  maphash.Seed
	mu    sync.Mutex
	texts map[uint64]int
}

// counter is the counter of every simulated session.
var counter = &memoCounter{Counter: tokens.ForModel("gpt-4o"), seed: maphash.MakeSeed(), texts: map[uint64]int{}}

func (c *memoCounter) Text(s string) int {
	key := maphash.String(c.seed, s)
	c.mu.Lock()
	n, ok := c.texts[key]
	c.mu.Unlock()
	if ok {
		return n
	}
	n = c.Counter.Text(s)
	c.mu.Lock()
	c.texts[key] = n
	c.mu.Unlock()
	return n
}

func (c *memoCounter) Message(m defs.Message) int { return tokens.MessageCount(c.Text, m) }

// sim is the simulated coding agent: a model and the tools it calls.
type sim struct {
	rng        *rand.Rand // the agent's actions
	summaryRng *rand.Rand // the summaries' contents
	steps      int
	calls      int // model calls answered (summaries excluded)
	summaries  int // summarising calls answered
	counter    *memoCounter
	ids        int
	files      []string
}

func newSim(steps int, seed uint64) *sim {
	s := &sim{
		rng:        rand.New(rand.NewPCG(seed, 7)),
		summaryRng: rand.New(rand.NewPCG(seed, 8)),
		steps:      steps,
		counter:    counter,
	}
	for i := range 40 {
		s.files = append(s.files, fmt.Sprintf("internal/pkg%d/file%d.go", i%7, i))
	}
	return s
}

// contents holds the files content made, by path and version: every
// session reads the same few.
var contents sync.Map

// content returns a deterministic file of 2 to 8 KB.
func content(path string, version int) string {
	key := fmt.Sprint(version, ":", path)
	if c, ok := contents.Load(key); ok {
		return c.(string)
	}
	c := makeContent(path, version)
	contents.Store(key, c)
	return c
}

func makeContent(path string, version int) string {
	r := rand.New(rand.NewPCG(uint64(len(path))*31+uint64(version), uint64(strings.Count(path, "1"))+uint64(path[len(path)-4])))
	n := 2048 + r.IntN(6144)
	var b strings.Builder
	fmt.Fprintf(&b, "// %s (version %d)\npackage x\n\n", path, version)
	for b.Len() < n {
		fmt.Fprintf(&b, "func f%d(a, b int) int {\n\treturn a*%d + b - %d // %s\n}\n\n", r.IntN(1e6), r.IntN(97), r.IntN(89), words[r.IntN(len(words))])
	}
	return b.String()[:n]
}

var words = []string{"cache", "parse", "token", "window", "request", "state", "effect", "render", "summary", "retry"}

type pathArgs struct {
	Path string `json:"path"`
}

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

type grepArgs struct {
	Pattern string `json:"pattern"`
}

func (s *sim) declare(p *prompt.Prompt) {
	modified, setModified := prompt.State(p, "modified", []string{})
	p.DefSystem("role", "You are a coding agent working in a Go repository. Read code, change it, run the tests, until they pass.")
	p.DefSystem("rules", strings.Repeat("Prefer small, reviewed changes. Run the tests after every change. ", 6))
	prompt.DefTool(p, "read_file", "Read a file.", func(ctx context.Context, a pathArgs) (string, error) {
		return content(a.Path, 0), nil
	})
	prompt.DefTool(p, "write_file", "Write a file.", func(ctx context.Context, a writeArgs) (string, error) {
		setModified.Update(ctx, func(m []string) []string { return append(append([]string(nil), m...), a.Path) })
		return fmt.Sprintf("wrote %d bytes to %s", len(a.Content), a.Path), nil
	})
	prompt.DefTool(p, "run_tests", "Run the test suite.", func(ctx context.Context, _ struct{}) (string, error) {
		out := testOutput(len(modified))
		if len(modified)%3 != 2 {
			return "", fmt.Errorf("tests failed:\n%s", out[:min(len(out), 1500)])
		}
		return out, nil
	})
	grep := prompt.DefTool(p, "grep", "Search the repository.", func(ctx context.Context, a grepArgs) (string, error) {
		var b strings.Builder
		for i := range 25 {
			fmt.Fprintf(&b, "internal/pkg%d/file%d.go:%d: %s(...)\n", i%7, i, 10+i*3, a.Pattern)
		}
		return b.String(), nil
	})
	if toggleTool > 0 && p.Step()/toggleTool%2 == 1 {
		grep.Disable()
	}
	p.User("The tests in internal/ fail since the last refactoring. Find out why and fix them.")
}

func testOutput(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < 3000+(n%4)*1000; i++ {
		fmt.Fprintf(&b, "=== RUN   TestCase%d\n--- PASS: TestCase%d (0.0%ds)\n", i, i, i%10)
		if i%9 == 4 {
			fmt.Fprintf(&b, "    case_test.go:%d: got %d, want %d\n--- FAIL: TestCase%d\n", 20+i, i, i+1, i)
		}
	}
	return b.String()
}

// Generate answers as the agent would: summary requests with a summary, and
// otherwise the next action of a long debugging session.
func (s *sim) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	if req.Purpose == llm.PurposeSummary {
		s.summaries++
		var b strings.Builder
		b.WriteString("Goal: fix the failing tests in internal/.\nProgress: read the failing packages, changed several functions, tests still partly failing.\n")
		for i := range 12 {
			fmt.Fprintf(&b, "Key fact %d: %s in %s\n", i, words[s.summaryRng.IntN(len(words))], s.files[s.summaryRng.IntN(len(s.files))])
		}
		b.WriteString("Next steps: run the tests again and fix the remaining failures.")
		return &llm.Reply{Message: defs.AssistantMessage(b.String())}, nil
	}
	s.calls++
	if s.calls >= s.steps {
		return &llm.Reply{Message: defs.AssistantMessage("All tests pass now: the refactoring had swapped two arguments.")}, nil
	}
	msg := defs.Message{Role: defs.RoleAssistant}
	call := func(name, args string) {
		s.ids++
		msg.ToolCalls = append(msg.ToolCalls, defs.ToolCall{ID: fmt.Sprintf("call_%d", s.ids), Name: name, Arguments: []byte(args)})
	}
	file := func() string { return s.files[s.rng.IntN(len(s.files))] }
	switch x := s.rng.IntN(100); {
	case x < 25:
		call("read_file", fmt.Sprintf(`{"path":%q}`, file()))
	case x < 40: // parallel reads
		for range 2 + s.rng.IntN(2) {
			call("read_file", fmt.Sprintf(`{"path":%q}`, file()))
		}
	case x < 65:
		call("run_tests", `{}`)
	case x < 85:
		msg.Content = "Fixing the argument order."
		call("write_file", fmt.Sprintf(`{"path":%q,"content":"package x\n\nfunc fixed() {}\n"}`, file()))
	default:
		call("grep", fmt.Sprintf(`{"pattern":%q}`, words[s.rng.IntN(len(words))]))
	}
	return &llm.Reply{Message: msg}, nil
}
