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
// in full (PreserveTurns 1, Batch 1): the rewrite then starts just before
// the model's latest reply, which no provider had cached yet, so trimming
// breaks almost none of the cached prefix, while a moving "keep the last
// four results" boundary re-sends several full results at every step.
// Compaction (a summary by the model) starts well before the window is
// full: the cached prefix is billed at every step, so a long history costs
// at every step, and a summary costs only its input once; the dearer cached
// input is, the earlier it pays to compact.
//
// On the simulated 320-step session of examples/longsession (32k window,
// 4k reserve, summaries billed), against a baseline that trims with a
// moving boundary at every step and compacts at CompactConfig's default
// threshold, this bills 0.48 to 0.52 of the baseline's input at a cached
// price of 0.1 and 0.46 to 0.52 at 0.5 (seeds 1 to 5), less than any of
// the rule-based compactions, and every tool result reaches the model in
// full before it is trimmed or summarised. The price of compacting early:
// the model knows older turns only from the summary sooner (12 to 16
// summaries in those 320 steps, against 6 at 0.8); set a higher
// CompactConfig.Threshold when a longer verbatim history matters more than
// the bill. For a Local profile results keep
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
	compact := &CompactConfig{Window: w, Reserve: profile.OutputReserve, Threshold: DefaultsThreshold(profile.CachedInputFraction), Continue: true}
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

// DefaultsThreshold returns the compaction threshold of Defaults (a
// fraction of the usable window) for a cached-input price, as a fraction
// of the fresh input price: 0.45 up to 0.1, 0.4 from 0.5 on, in proportion
// between. Zero means DefaultCachedInputFraction.
//
// Measured on examples/longsession: at 0.1, compacting below 0.45 saves
// nothing more (the summaries' input grows as fast as the requests
// shrink); at 0.5 every step of the cached history costs five times more,
// and compacting earlier keeps paying.
func DefaultsThreshold(cachedInputFraction float64) float64 {
	p := cachedInputFraction
	if p <= 0 {
		p = DefaultCachedInputFraction
	}
	const lo, hi = 0.1, 0.5
	const atLo, atHi = 0.45, 0.4
	switch {
	case p <= lo:
		return atLo
	case p >= hi:
		return atHi
	}
	return atLo + (p-lo)/(hi-lo)*(atHi-atLo)
}
