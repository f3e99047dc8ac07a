package builtin

import (
	"github.com/reprompt/reprompt/effects"
)

// Defaults returns the effects that apply when a model's window is known and
// nothing is configured: trim_tool_results and compact with the window and
// reserve of profile, compacting at a threshold picked by the profile's
// cached-input price (DefaultsThreshold).
//
// The defaults are tuned for prompt caches. A tool result is trimmed (to
// its first 600 bytes) as soon as the model has answered after reading it
// in full (PreserveTurns 1, Batch 1), and the trimming declares it
// beforehand (effects.Step.WillRewrite), so that the part before it is the
// request's committed part, which a provider that caches up to breakpoints
// (providers/anthropic) reads at the next step; a moving "keep the last
// four results" boundary re-sends several full results at every step.
// Compaction (a summary by the model) continues the run's own request
// (CompactConfig.Continue), whose prefix the provider cached, so that a
// summary costs little more than its instructions and its output; it then
// pays to compact early: the cached history is billed at every step.
//
// On the simulated 320-step session of examples/longsession (32k window,
// 4k reserve, summaries and cache writes billed), against a baseline that
// trims with a moving boundary at every step and compacts at
// CompactConfig's default threshold, this bills 0.39 to 0.42 of the
// baseline's input at a cached price of 0.1 (writes at 1 or 1.25, OpenAI-
// like), 0.35 to 0.36 at 0.5, and 0.20 under Anthropic's breakpoints and
// prices (seeds 1 to 5), less than any of the rule-based
// compactions, and every tool result reaches the model in full before it
// is trimmed or summarised. The price of compacting early: the model knows
// older turns only from the summary sooner (22 to 26 summaries in those
// 320 steps at 0.1, 31 to 39 at 0.5, against 6 at 0.8); set a higher
// CompactConfig.Threshold when a longer verbatim history matters more than
// the bill. In a small window the threshold is raised so that compaction
// waits for DefaultsMinHistory tokens (up to DefaultThreshold): a summary
// then replaces a few tool results at most, and costs about what it
// saves. For a Local profile results keep
// 300 bytes and compaction starts at 0.7 (the last 4 messages left alone
// by its trimming): a local model bills nothing. A profile with no window
// gives a Config with no effects.
func Defaults(profile Profile) *Config {
	cfg := &Config{File: "defaults", Profile: profile}
	w := profile.EffectiveWindow()
	if w == 0 {
		return cfg
	}
	trim := &TrimConfig{PreserveTurns: 1, Batch: 1, MaxResultLength: 600}
	th := DefaultsThreshold(profile.CachedInputFraction)
	th = min(max(th, DefaultsMinHistory/float64(profile.Usable())), DefaultThreshold)
	compact := &CompactConfig{Window: w, Reserve: profile.OutputReserve, Threshold: th, Continue: true}
	if profile.Local {
		trim.MaxResultLength = 300
		compact.Threshold, compact.TrimRecent, compact.MaxResultLength = 0.7, 4, 300
	}
	cfg.Effects = []Effect{
		{Kind: KindTrimToolResults, Phase: effects.AfterReply, Trim: trim},
		{Kind: KindCompact, Phase: effects.BeforeCall, Compact: compact},
	}
	return cfg
}

// DefaultsMinHistory is the fewest tokens of a request Defaults lets it
// reach before compacting, whatever DefaultsThreshold says: 6,000, a few
// tool results. On examples/longsession with an 8k window (2k reserved),
// thresholds of 0.3, 0.45, 0.6 and 0.8 bill 696k, 667k, 650k and 654k
// (seed 1, cached price 0.1; 207, 154, 94 and 63 summaries); with 16k
// (4k reserved), 703k, 695k, 711k and 744k at 0.3, 0.45, 0.58 and 0.8.
const DefaultsMinHistory = 6000

// DefaultsThreshold returns the compaction threshold of Defaults (a
// fraction of the usable window) for a cached-input price, as a fraction
// of the fresh input price: 0.3 up to 0.1, 0.25 from 0.5 on, in proportion
// between. Zero means DefaultCachedInputFraction.
//
// Measured on examples/longsession, with summaries that continue the
// cached request: at 0.1, thresholds of 0.45, 0.35, 0.3 and 0.25 bill at
// most 0.46, 0.44, 0.42 and 0.42 of the baseline over seeds 1 to 5 (12,
// 17–19, 22–26 and 31–39 summaries), so that compacting below 0.3 buys
// little for many more summaries; at 0.5 every step of the cached history
// costs five times more, and 0.3, 0.25 and 0.2 bill at most 0.39, 0.36
// and 0.34. A write price of 1.25 instead of 1 moves none of these by more
// than 0.01.
func DefaultsThreshold(cachedInputFraction float64) float64 {
	p := cachedInputFraction
	if p <= 0 {
		p = DefaultCachedInputFraction
	}
	const lo, hi = 0.1, 0.5
	const atLo, atHi = 0.3, 0.25
	switch {
	case p <= lo:
		return atLo
	case p >= hi:
		return atHi
	}
	return atLo + (p-lo)/(hi-lo)*(atHi-atLo)
}
