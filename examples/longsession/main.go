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
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/effects/builtin"
	"github.com/reprompt/reprompt/examples/longsession/sim"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/sqlite"
)

const (
	window  = sim.Window
	reserve = sim.Reserve
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
	model := sim.New(steps, seed, toggleTool)
	agent := func(p *prompt.Prompt) error {
		model.Declare(p)
		register(p)
		return nil
	}
	cfg := runtime.Config{MaxSteps: steps + 10, Window: window, Reserve: reserve, Counter: sim.Counter, CachedInputFraction: price, StableTools: stableTools}
	if store != nil {
		cfg.Store, cfg.SessionID = store, id
		if err := store.Delete(context.Background(), id); err != nil {
			return m, err
		}
	}
	r := runtime.New(model, agent, cfg)
	tr := newTracker()
	for rec, err := range r.All(context.Background()) {
		if err != nil {
			return m, fmt.Errorf("step %d: %w", m.steps, err)
		}
		m.record(rec, tr)
	}
	m.summaries = model.Summaries()
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
		msgs += sim.Counter.Message(msg)
	}
	read := input - msgs // the tools and system prompt
	for _, msg := range req.Messages[:best] {
		read += sim.Counter.Message(msg)
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
			n -= sim.Counter.Message(msg)
		}
	}
	return n
}

// requestTokens counts req as the runtime does: its system prompt, its
// tools and its messages.
func requestTokens(req *llm.Request) int {
	n := sim.Counter.Text(req.System)
	for _, t := range req.Tools {
		n += sim.Counter.Tool(t.Name, t.Description, t.Parameters)
	}
	for _, msg := range req.Messages {
		n += sim.Counter.Message(msg)
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
