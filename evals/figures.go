package evals

import (
	"github.com/reprompt/reprompt/evals/internal/hotpath"
)

// PassAtK is the unbiased estimator of pass@k (Chen et al., 2021, "Evaluating
// Large Language Models Trained on Code"): the chance that at least one of k
// runs drawn without replacement from n runs, c of which passed, passes:
//
//	pass@k = 1 − C(n−c, k) / C(n, k)
//
// With k > n it is computed for k = n (all the runs there are); it is 0
// when n is 0. With k = n it is 1 when any run passed, 0 otherwise.
func PassAtK(n, c, k int) float64 {
	if n <= 0 || c <= 0 {
		return 0
	}
	k = min(k, n)
	if n-c < k {
		return 1
	}
	// C(n−c, k)/C(n, k) = ∏_{i=0}^{k−1} (n−c−i)/(n−i)
	q := 1.0
	for i := range k {
		q *= float64(n-c-i) / float64(n-i)
	}
	return 1 - q
}

// PassHatK is the unbiased estimator of pass^k (Yao et al., 2024, τ-bench):
// the chance that all of k runs drawn without replacement from n runs, c of
// which passed, pass:
//
//	pass^k = C(c, k) / C(n, k)
//
// With k > n it is computed for k = n; it is 0 when n is 0. With k = n it
// is 1 when every run passed, 0 otherwise.
func PassHatK(n, c, k int) float64 {
	if n <= 0 {
		return 0
	}
	k = min(k, n)
	if c < k {
		return 0
	}
	p := 1.0
	for i := range k {
		p *= float64(c-i) / float64(n-i)
	}
	return p
}

// Stat is the mean and the 95th percentile of a measure over runs.
type Stat struct {
	Mean float64 `json:"mean"`
	P95  float64 `json:"p95"`
}

// stat returns the Stat of xs, which it sorts (hotpath.Exact).
func stat(xs []float64) Stat {
	mean, p95 := hotpath.Exact(xs)
	return Stat{Mean: mean, P95: p95}
}

// Figures are the measures of a case's runs, or of every case's
// (Report.Overall).
type Figures struct {
	// Runs is the number of runs measured and Passed how many passed
	// every check. A run a budget cut short is not measured.
	Runs   int `json:"runs"`
	Passed int `json:"passed"`
	// PassAt1 is the share of runs that passed; PassAtK and PassHatK
	// are PassAtK and PassHatK with the eval's PassK (k) and the runs
	// measured (n). Overall, each is the mean over the cases that have a
	// run.
	PassAt1  float64 `json:"pass_at_1"`
	PassAtK  float64 `json:"pass_at_k"`
	PassHatK float64 `json:"pass_hat_k"`
	// Steps is the number of model calls of a run. InputTokens are the
	// input tokens the provider did not read from its cache, CacheRead
	// those it did, OutputTokens the reply's (llm.Usage). Cost is in US
	// dollars, at the eval's runtime.Config.Pricing, and LatencyMS the
	// wall time of a run, checks excluded, in milliseconds. A Stat of
	// zeros (no cost without Pricing, no cache read) is left out of the
	// JSON.
	Steps        Stat `json:"steps,omitzero"`
	InputTokens  Stat `json:"input_tokens,omitzero"`
	CacheRead    Stat `json:"cache_read_tokens,omitzero"`
	OutputTokens Stat `json:"output_tokens,omitzero"`
	Cost         Stat `json:"cost_usd,omitzero"`
	LatencyMS    Stat `json:"latency_ms,omitzero"`
}

// measures gathers the measures of a case's runs, for their Figures: one
// value a run and a measure.
type measures struct {
	runs, passed                           int
	steps, input, cache, output, cost, lat []float64
}

// newMeasures returns measures with room for n runs, in one allocation.
func newMeasures(n int) *measures {
	all := make([]float64, 6*n)
	part := func(i int) []float64 { return all[i*n : i*n : (i+1)*n] }
	return &measures{steps: part(0), input: part(1), cache: part(2), output: part(3), cost: part(4), lat: part(5)}
}

// reset empties m, keeping its room.
func (m *measures) reset() {
	m.runs, m.passed = 0, 0
	m.steps, m.input, m.cache, m.output, m.cost, m.lat = m.steps[:0], m.input[:0], m.cache[:0], m.output[:0], m.cost[:0], m.lat[:0]
}

func (m *measures) add(r *RunResult) {
	m.runs++
	if r.Pass {
		m.passed++
	}
	m.steps = append(m.steps, float64(r.Steps))
	m.input = append(m.input, float64(r.Usage.InputTokens-r.Usage.CachedTokens))
	m.cache = append(m.cache, float64(r.Usage.CachedTokens))
	m.output = append(m.output, float64(r.Usage.OutputTokens))
	m.cost = append(m.cost, r.Cost)
	m.lat = append(m.lat, r.LatencyMS)
}

// figures returns the figures of the runs added, pass@k and pass^k for k.
func (m *measures) figures(k int) Figures {
	f := Figures{
		Runs: m.runs, Passed: m.passed,
		Steps: stat(m.steps), InputTokens: stat(m.input), CacheRead: stat(m.cache),
		OutputTokens: stat(m.output), Cost: stat(m.cost), LatencyMS: stat(m.lat),
	}
	if m.runs > 0 {
		f.PassAt1 = float64(m.passed) / float64(m.runs)
		f.PassAtK = PassAtK(m.runs, m.passed, k)
		f.PassHatK = PassHatK(m.runs, m.passed, k)
	}
	return f
}

// overall gathers the measures of every run of an eval for its overall
// Figures, in memory that does not grow with the runs (hotpath.Top): at most
// n runs.
type overall struct {
	runs, passed                           int
	steps, input, cache, output, cost, lat *hotpath.Top
}

func newOverall(n int) *overall {
	return &overall{steps: hotpath.NewTop(n), input: hotpath.NewTop(n), cache: hotpath.NewTop(n), output: hotpath.NewTop(n), cost: hotpath.NewTop(n), lat: hotpath.NewTop(n)}
}

func (o *overall) add(r *RunResult) {
	o.runs++
	if r.Pass {
		o.passed++
	}
	o.steps.Add(float64(r.Steps))
	o.input.Add(float64(r.Usage.InputTokens - r.Usage.CachedTokens))
	o.cache.Add(float64(r.Usage.CachedTokens))
	o.output.Add(float64(r.Usage.OutputTokens))
	o.cost.Add(r.Cost)
	o.lat.Add(r.LatencyMS)
}

// figures returns the figures of the runs added; their pass rates are
// the caller's (the means of the cases').
func (o *overall) figures() Figures {
	return Figures{
		Runs: o.runs, Passed: o.passed,
		Steps: statOf(o.steps), InputTokens: statOf(o.input), CacheRead: statOf(o.cache),
		OutputTokens: statOf(o.output), Cost: statOf(o.cost), LatencyMS: statOf(o.lat),
	}
}

// statOf returns the Stat t gathered.
func statOf(t *hotpath.Top) Stat {
	mean, p95 := t.Stat()
	return Stat{Mean: mean, P95: p95}
}
