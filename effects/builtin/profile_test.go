package builtin_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/effects/builtin"
)

func TestProfileFor(t *testing.T) {
	tests := []struct {
		model string
		want  builtin.Profile
	}{
		{"gpt-4o", builtin.Profile{Window: 128_000, OutputReserve: 16_384, CachedInputFraction: 0.5, CacheWriteFraction: 1, StructuredOutput: true}},
		{"gpt-4o-mini-2024-07-18", builtin.Profile{Window: 128_000, OutputReserve: 16_384, CachedInputFraction: 0.5, CacheWriteFraction: 1, StructuredOutput: true}},
		{"openai/GPT-4.1-mini", builtin.Profile{Window: 1_047_576, OutputReserve: 32_768, CachedInputFraction: 0.25, CacheWriteFraction: 1, StructuredOutput: true}},
		{"gpt-4", builtin.Profile{Window: 8_192, OutputReserve: 2_048}},
		{"gpt-4-32k-0613", builtin.Profile{Window: 32_768, OutputReserve: 4_096}},
		{"gpt-4-turbo", builtin.Profile{Window: 128_000, OutputReserve: 4_096}},
		{"gpt-3.5-turbo", builtin.Profile{Window: 16_385, OutputReserve: 4_096}},
		{"gpt-5-mini", builtin.Profile{Window: 400_000, OutputReserve: 128_000, CachedInputFraction: 0.1, CacheWriteFraction: 1, StructuredOutput: true}},
		{"o1-mini", builtin.Profile{Window: 128_000, OutputReserve: 65_536, CachedInputFraction: 0.5, CacheWriteFraction: 1}},
		{"o3-mini", builtin.Profile{Window: 200_000, OutputReserve: 100_000, CachedInputFraction: 0.5, CacheWriteFraction: 1, StructuredOutput: true}},
		{"o3", builtin.Profile{Window: 200_000, OutputReserve: 100_000, CachedInputFraction: 0.25, CacheWriteFraction: 1, StructuredOutput: true}},
		{"gpt-4o-2024-05-13", builtin.Profile{Window: 128_000, OutputReserve: 4_096, CachedInputFraction: 0.5, CacheWriteFraction: 1}},
		{"o1-preview", builtin.Profile{Window: 128_000, OutputReserve: 32_768, CachedInputFraction: 0.5, CacheWriteFraction: 1}},
		{"o1-2024-12-17", builtin.Profile{Window: 200_000, OutputReserve: 100_000, CachedInputFraction: 0.5, CacheWriteFraction: 1, StructuredOutput: true}},
		{"chatgpt-4o-latest", builtin.Profile{Window: 128_000, OutputReserve: 16_384}},
		{"claude-sonnet-4-5-20250929", builtin.Profile{Window: 200_000, OutputReserve: 64_000, CachedInputFraction: 0.1, CacheWriteFraction: 1.25, CacheWrite1hFraction: 2}},
		{"claude-opus-4-1-20250805", builtin.Profile{Window: 200_000, OutputReserve: 32_000, CachedInputFraction: 0.1, CacheWriteFraction: 1.25, CacheWrite1hFraction: 2}},
		{"claude-opus-4-5", builtin.Profile{Window: 200_000, OutputReserve: 64_000, CachedInputFraction: 0.1, CacheWriteFraction: 1.25, CacheWrite1hFraction: 2}},
		{"anthropic/Claude-3-5-Haiku-latest", builtin.Profile{Window: 200_000, OutputReserve: 8_192, CachedInputFraction: 0.1, CacheWriteFraction: 1.25, CacheWrite1hFraction: 2}},
		{"claude-3-haiku-20240307", builtin.Profile{Window: 200_000, OutputReserve: 4_096, CachedInputFraction: 0.12, CacheWriteFraction: 1.2, CacheWrite1hFraction: 2}},
		{"ollama/llama3.1:8b", builtin.Local(131_072)},
		{"llama3:latest", builtin.Local(8_192)},
		{"qwen2.5-coder:7b", builtin.Local(32_768)},
		{"phi3", builtin.Local(4_096)},
		{"unknown-model", builtin.Profile{}},
		{"", builtin.Profile{}},
	}
	for _, tt := range tests {
		got := builtin.ProfileFor(tt.model)
		assert.Equal(t, tt.want, got, "ProfileFor(%q) = %+v, want %+v", tt.model, got, tt.want)
	}
}

func TestLocalProfile(t *testing.T) {
	tests := []struct {
		window, effective, reserve, usable int
	}{
		{0, 4096, 512, 3584},
		{2048, 4096, 512, 3584},
		{8192, 8192, 1024, 7168},
		{131072, 131072, 4096, 126976},
	}
	for _, tt := range tests {
		p := builtin.Local(tt.window)
		assert.True(t, p.Local, "Local(%d) = %+v: Local", tt.window, p)
		assert.Equal(t, builtin.LocalFloor, p.Floor, "Local(%d) = %+v: Floor", tt.window, p)
		assert.Equal(t, tt.effective, p.EffectiveWindow(), "Local(%d) = %+v: EffectiveWindow", tt.window, p)
		assert.Equal(t, tt.reserve, p.OutputReserve, "Local(%d) = %+v: OutputReserve", tt.window, p)
		assert.Equal(t, tt.usable, p.Usable(), "Local(%d) = %+v: Usable", tt.window, p)
	}
	u := (builtin.Profile{Window: 1000, OutputReserve: 2000}).Usable()
	assert.Equal(t, 500, u, "a reserve larger than the window: usable %d", u)
}

func TestDefaults(t *testing.T) {
	cfg := builtin.Defaults(builtin.Profile{})
	require.Empty(t, cfg.Effects, "no window, effects %+v", cfg.Effects)
	cfg = builtin.Defaults(builtin.ProfileFor("gpt-4o"))
	require.Len(t, cfg.Effects, 2, "effects %+v", cfg.Effects)
	require.Equal(t, builtin.KindTrimToolResults, cfg.Effects[0].Kind, "effects %+v", cfg.Effects)
	require.Equal(t, builtin.KindCompact, cfg.Effects[1].Kind, "effects %+v", cfg.Effects)
	c := cfg.Effects[1].Compact
	assert.Equal(t, 128_000, c.Window, "compact %+v", c)
	assert.Equal(t, 16_384, c.Reserve, "compact %+v", c)
	assert.Equal(t, 0.25, c.Threshold, "compact %+v", c) // gpt-4o's cached input: 0.5
	assert.True(t, c.Continue, "compact %+v: summaries continue the cached request", c)
	local := builtin.Defaults(builtin.Local(0))
	c = local.Effects[1].Compact
	assert.Equal(t, 4096, c.Window, "local compact %+v", c)
	assert.Equal(t, 0.7, c.Threshold, "local compact %+v", c)
	tr := local.Effects[0].Trim
	assert.Equal(t, 300, tr.MaxResultLength, "local trim %+v", tr)
	assert.Equal(t, 1, tr.PreserveTurns, "local trim %+v", tr)
	assert.Equal(t, 1, tr.Batch, "local trim %+v", tr)
	tr = cfg.Effects[0].Trim
	assert.Equal(t, 600, tr.MaxResultLength, "trim %+v", tr)
	assert.Equal(t, 1, tr.PreserveTurns, "trim %+v", tr)
	assert.Equal(t, 1, tr.Batch, "trim %+v", tr)
}

// TestDefaultsThreshold: the dearer cached input, the earlier Defaults
// compacts.
func TestDefaultsThreshold(t *testing.T) {
	for _, tc := range []struct{ price, want float64 }{
		{0, 0.3}, {0.05, 0.3}, {0.1, 0.3}, {0.3, 0.275}, {0.5, 0.25}, {1, 0.25},
	} {
		assert.InDelta(t, tc.want, builtin.DefaultsThreshold(tc.price), 1e-9, "price %v", tc.price)
		cfg := builtin.Defaults(builtin.Profile{Window: 32_768, OutputReserve: 4_096, CachedInputFraction: tc.price})
		require.Len(t, cfg.Effects, 2)
		assert.InDelta(t, tc.want, cfg.Effects[1].Compact.Threshold, 1e-9, "price %v", tc.price)
	}
	// A small window waits for DefaultsMinHistory tokens, up to
	// CompactConfig's default threshold.
	for _, tc := range []struct {
		window, reserve int
		want            float64
	}{
		{8192, 2048, 0.8}, {16384, 4096, 6000.0 / 12288}, {32768, 4096, 0.3}, {1500, 250, 0.8},
	} {
		cfg := builtin.Defaults(builtin.Profile{Window: tc.window, OutputReserve: tc.reserve})
		assert.InDelta(t, tc.want, cfg.Effects[1].Compact.Threshold, 1e-9, "window %d", tc.window)
	}
	local := builtin.Local(8192)
	local.CachedInputFraction = 0.5
	assert.Equal(t, 0.7, builtin.Defaults(local).Effects[1].Compact.Threshold, "a local model bills nothing: its threshold does not follow a price")
}

// TestParseCachedInput: cached_input sets the profile's price, and so the
// defaults' threshold.
func TestParseCachedInput(t *testing.T) {
	cfg, err := builtin.Parse("p.yaml", []byte("window: 32768\nreserve: 4096\ncached_input: 0.5\n"))
	require.NoError(t, err)
	assert.Equal(t, 0.5, cfg.Profile.CachedInputFraction)
	require.Len(t, cfg.Effects, 2)
	assert.Equal(t, 0.25, cfg.Effects[1].Compact.Threshold)
	_, err = builtin.Parse("p.yaml", []byte("window: 32768\ncached_input: 2\n"))
	var ce *builtin.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, builtin.ConfigError{File: "p.yaml", Line: 2, Column: 15, Msg: "cached_input: want a fraction of the input price in [0, 1], got 2"}, *ce)
}
