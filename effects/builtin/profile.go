package builtin

import (
	"cmp"
	"slices"
	"strings"

	"github.com/reprompt/reprompt/internal/modelcaps"
)

// LocalFloor is the smallest window assumed for a local model (Floor of
// Local profiles): local servers often report a context of 0 or less than
// the model really gets.
const LocalFloor = 4096

// Profile is what context management needs to know of a model.
type Profile struct {
	// Window is the context window in tokens (input and output); 0 means
	// unknown, and context management stays off.
	Window int
	// OutputReserve is the part of the window kept for the reply.
	OutputReserve int
	// Floor is the smallest window assumed, whatever Window says; 0 means
	// none.
	Floor int
	// Local marks a model served locally (Ollama style): small windows, so
	// Defaults trims more aggressively.
	Local bool
	// CachedInputFraction is the share of the fresh input price the
	// provider bills for input tokens served from its prompt cache (0.1
	// for OpenAI's and Anthropic's cache reads, 0.25 to 0.5 for others).
	// Defaults picks how often to compact by it. Zero means unknown:
	// DefaultCachedInputFraction is assumed.
	CachedInputFraction float64
	// CacheWriteFraction is the share of the fresh input price the
	// provider bills for input tokens written to its prompt cache for its
	// default lifetime: 1.25 for Anthropic's 5-minute cache, 1 for OpenAI's
	// models (a write costs what the input costs). CacheWrite1hFraction is
	// the share for a write to an entry that lives an hour: 2 for
	// Anthropic. Zero means unknown, which llm.Pricing takes as 1 (and the
	// hour's share as CacheWriteFraction). Give the three shares to
	// llm.Pricing (CacheRead, CacheWrite, CacheWrite1h) to price a run's
	// usage as the provider bills it.
	CacheWriteFraction   float64
	CacheWrite1hFraction float64
	// StructuredOutput reports that the model takes a strict JSON Schema
	// as its response_format (OpenAI's structured outputs), so that a typed
	// answer (prompt.DefOutput) is asked for that way rather than with an
	// answer tool; providers/openai reads it (openai.Config.NativeOutput
	// overrides it).
	StructuredOutput bool
}

// DefaultCachedInputFraction is the cached-input price assumed when a
// Profile does not give one.
const DefaultCachedInputFraction = 0.1

// EffectiveWindow returns the window to budget for: Window, raised to Floor.
func (p Profile) EffectiveWindow() int { return max(p.Window, p.Floor) }

// Usable returns the tokens a request may use: EffectiveWindow minus
// OutputReserve (half the window if the reserve takes it all).
func (p Profile) Usable() int {
	w := p.EffectiveWindow()
	if u := w - p.OutputReserve; u > 0 {
		return u
	}
	return w / 2
}

// Local returns the profile of a model served locally with a window of
// window tokens (the server's num_ctx, not the model's nominal maximum, if
// they differ): window floored at LocalFloor, an output reserve of an
// eighth of it (between 512 and 4096 tokens).
func Local(window int) Profile {
	w := max(window, LocalFloor)
	return Profile{Window: window, OutputReserve: min(max(w/8, 512), 4096), Floor: LocalFloor, Local: true}
}

type profileEntry struct {
	prefix string
	p      Profile
}

// profiles is the table behind ProfileFor, longest prefix first. The
// windows are the providers' published context lengths.
//
// The cache prices are shares of the input price. Anthropic's were checked
// on 2026-11-26 against the table of
// https://docs.anthropic.com/en/docs/about-claude/pricing (a stored copy:
// Opus 4.1, Opus 4, Sonnet 4, Sonnet 3.7, Haiku 3.5, Opus 3 and Haiku 3
// are listed there; the 4.5 models were not in that copy and are priced
// as their family). OpenAI's are from its price list as it stood in late
// 2025, as the author of this table knew it, without access to the list
// itself. Check them against https://openai.com/api/pricing and the page
// above before billing anyone by them, and set the Profile's fields where
// they changed.
//
//   - OpenAI: a cached input token costs 0.1 of the input price on the
//     gpt-5 family, 0.25 on gpt-4.1, o3 and o4-mini, 0.5 on gpt-4o, o1 and
//     o3-mini; OpenAI bills no premium for writing to its cache (a write
//     is billed as the input it is: 1), for the models listed here. (The
//     issue that asked for these prices says OpenAI's newest models bill
//     writes at 1.25; no model listed here is one of them.)
//   - Anthropic: a cache read (a hit, or a refresh) costs 0.1 of the
//     input price, a write 1.25 for the default 5-minute cache and 2 for
//     the 1-hour cache, on every current model; claude-3-haiku is the
//     exception, at $0.03 and $0.30 for $0.25 of input (0.12 and 1.2).
var profiles = func() []profileEntry {
	openai := func(window, reserve int, read float64) Profile {
		return Profile{Window: window, OutputReserve: reserve, CachedInputFraction: read, CacheWriteFraction: 1}
	}
	claude := func(reserve int) Profile {
		return Profile{Window: 200_000, OutputReserve: reserve, CachedInputFraction: 0.1, CacheWriteFraction: 1.25, CacheWrite1hFraction: 2}
	}
	t := []profileEntry{
		// OpenAI.
		{"gpt-5", openai(400_000, 128_000, 0.1)},
		{"gpt-4.1", openai(1_047_576, 32_768, 0.25)},
		{"gpt-4o", openai(128_000, 16_384, 0.5)},
		{"chatgpt-4o", Profile{Window: 128_000, OutputReserve: 16_384}},
		{"gpt-4-turbo", Profile{Window: 128_000, OutputReserve: 4_096}},
		{"gpt-4-1106", Profile{Window: 128_000, OutputReserve: 4_096}},
		{"gpt-4-0125", Profile{Window: 128_000, OutputReserve: 4_096}},
		{"gpt-4-32k", Profile{Window: 32_768, OutputReserve: 4_096}},
		{"gpt-4", Profile{Window: 8_192, OutputReserve: 2_048}},
		{"gpt-3.5-turbo-instruct", Profile{Window: 4_096, OutputReserve: 1_024}},
		{"gpt-3.5-turbo", Profile{Window: 16_385, OutputReserve: 4_096}},
		{"gpt-4o-2024-05-13", openai(128_000, 4_096, 0.5)},
		{"o1-preview", openai(128_000, 32_768, 0.5)},
		{"o1-mini", openai(128_000, 65_536, 0.5)},
		{"o1", openai(200_000, 100_000, 0.5)},
		{"o3-mini", openai(200_000, 100_000, 0.5)},
		{"o3", openai(200_000, 100_000, 0.25)},
		{"o4-mini", openai(200_000, 100_000, 0.25)},
		{"gpt-oss", Profile{Window: 131_072, OutputReserve: 16_384}},
		// Anthropic: a 200,000-token window (Sonnet 4 and 4.5 take a
		// million behind a beta header, not assumed here); the reserve is
		// the model's largest output.
		{"claude-opus-4-5", claude(64_000)},
		{"claude-opus-4-1", claude(32_000)},
		{"claude-opus-4", claude(32_000)},
		{"claude-sonnet-4-5", claude(64_000)},
		{"claude-sonnet-4", claude(64_000)},
		{"claude-haiku-4-5", claude(64_000)},
		{"claude-3-7-sonnet", claude(64_000)},
		{"claude-3-5-sonnet", claude(8_192)},
		{"claude-3-5-haiku", claude(8_192)},
		{"claude-3-opus", claude(4_096)},
		{"claude-3-haiku", Profile{Window: 200_000, OutputReserve: 4_096, CachedInputFraction: 0.12, CacheWriteFraction: 1.2, CacheWrite1hFraction: 2}},
		// Local models, nominal windows.
		{"llama3.1", Local(131_072)},
		{"llama3.2", Local(131_072)},
		{"llama3.3", Local(131_072)},
		{"llama3", Local(8_192)},
		{"llama2", Local(4_096)},
		{"codellama", Local(16_384)},
		{"qwen3", Local(40_960)},
		{"qwen2.5", Local(32_768)},
		{"qwen2", Local(32_768)},
		{"mistral-nemo", Local(131_072)},
		{"mistral", Local(32_768)},
		{"mixtral", Local(32_768)},
		{"gemma3", Local(131_072)},
		{"gemma2", Local(8_192)},
		{"gemma", Local(8_192)},
		{"phi4", Local(16_384)},
		{"phi3", Local(4_096)},
		{"deepseek-r1", Local(131_072)},
		{"deepseek-coder-v2", Local(163_840)},
		{"deepseek-coder", Local(16_384)},
	}
	slices.SortStableFunc(t, func(a, b profileEntry) int { return cmp.Compare(len(b.prefix), len(a.prefix)) })
	return t
}()

// ProfileFor returns the profile of a model by name, or the zero Profile
// (window unknown) for a model it does not know. The name is matched
// case-insensitively by prefix, after dropping a provider prefix
// ("ollama/", "openai/") and a tag (":8b"), so dated snapshots such as
// gpt-4o-2024-08-06 match their family.
//
// The table:
//
//	model                        window     output reserve   cached input   cache write (1h)   structured output
//	gpt-5*                       400000     128000           0.1            1                  yes
//	gpt-4.1*                     1047576    32768            0.25           1                  yes
//	gpt-4o*                      128000     16384            0.5            1                  yes (gpt-4o-2024-05-13: 4096, no)
//	chatgpt-4o*                  128000     16384
//	gpt-4-turbo*, -1106, -0125   128000     4096
//	gpt-4-32k*                   32768      4096
//	gpt-4*                       8192       2048
//	gpt-3.5-turbo*               16385      4096 (instruct: 4096, 1024)
//	o1*                          200000     100000           0.5            1                  yes (o1-mini: 128000, 65536, no; o1-preview: 128000, 32768, no)
//	o3-mini*                     200000     100000           0.5            1                  yes
//	o3*, o4-mini*                200000     100000           0.25           1                  yes
//	gpt-oss*                     131072     16384
//	claude-opus-4-5*             200000     64000            0.1            1.25 (2)
//	claude-opus-4*, -4-1*        200000     32000            0.1            1.25 (2)
//	claude-sonnet-4*, -4-5*      200000     64000            0.1            1.25 (2)
//	claude-haiku-4-5*            200000     64000            0.1            1.25 (2)
//	claude-3-7-sonnet*           200000     64000            0.1            1.25 (2)
//	claude-3-5-sonnet*, -haiku*  200000     8192             0.1            1.25 (2)
//	claude-3-opus*               200000     4096             0.1            1.25 (2)
//	claude-3-haiku*              200000     4096             0.12           1.2 (2)
//
// The cached-input and cache-write columns are the shares of the input
// price the provider bills for a token read from its prompt cache and for
// one written to it (Anthropic's 1-hour cache in parentheses; OpenAI has
// no such write, and its 24-hour retention costs nothing more). They are
// the providers' published prices as they stood in late 2025, written in
// November 2026 from what the table's author knew of them, not read from
// the lists: check them against the providers' pricing pages, and set
// Profile.CachedInputFraction, CacheWriteFraction and CacheWrite1hFraction
// where they changed. Blank means unknown. The structured-output column is Profile.StructuredOutput: the models OpenAI
// documents as taking a strict json_schema response_format; blank means
// no or unknown (local models among them: servers differ).
//
// Local models get Local(window), with their nominal window: llama3.1/3.2/3.3
// 131072, llama3 8192, llama2 4096, codellama 16384, qwen3 40960, qwen2.5 and
// qwen2 32768, mistral-nemo 131072, mistral and mixtral 32768, gemma3
// 131072, gemma2 and gemma 8192, phi4 16384, phi3 4096, deepseek-r1 131072,
// deepseek-coder-v2 163840, deepseek-coder 16384. A local server may run a
// model with a smaller context than its nominal one (Ollama's num_ctx):
// use Local(numCtx) then.
func ProfileFor(model string) Profile {
	name := modelcaps.Normalize(model)
	for _, e := range profiles {
		if strings.HasPrefix(name, e.prefix) {
			p := e.p
			p.StructuredOutput = modelcaps.StructuredOutput(name)
			return p
		}
	}
	return Profile{}
}
