package llm_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"

	"github.com/reprompt/reprompt/llm"
)

func TestUsageSplit(t *testing.T) {
	tests := []struct {
		name string
		u    llm.Usage
		want llm.InputSplit
	}{
		{"no cache", llm.Usage{InputTokens: 100}, llm.InputSplit{Uncached: 100}},
		{"reads", llm.Usage{InputTokens: 100, CachedTokens: 80}, llm.InputSplit{Uncached: 20, CacheRead: 80}},
		{"reads and writes", llm.Usage{InputTokens: 1000, CachedTokens: 600, CacheWriteTokens: 300}, llm.InputSplit{Uncached: 100, CacheRead: 600, CacheWrite: 300}},
		{"an hour's writes", llm.Usage{InputTokens: 1000, CachedTokens: 600, CacheWriteTokens: 300, CacheWrite1hTokens: 200},
			llm.InputSplit{Uncached: 100, CacheRead: 600, CacheWrite: 100, CacheWrite1h: 200}},
		{"reads beyond the total", llm.Usage{InputTokens: 100, CachedTokens: 150, CacheWriteTokens: 10}, llm.InputSplit{CacheRead: 100}},
		{"writes beyond what reads leave", llm.Usage{InputTokens: 100, CachedTokens: 70, CacheWriteTokens: 50, CacheWrite1hTokens: 60},
			llm.InputSplit{CacheRead: 70, CacheWrite1h: 30}},
		{"negative counts", llm.Usage{InputTokens: 50, CachedTokens: -5, CacheWriteTokens: -1, CacheWrite1hTokens: -1}, llm.InputSplit{Uncached: 50}},
		{"negative total", llm.Usage{InputTokens: -1, CachedTokens: 5}, llm.InputSplit{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.u.Split()
			assert.Empty(t, cmp.Diff(tt.want, got), "Split of %+v mismatch (-want +got)", tt.u)
			assert.Equal(t, max(tt.u.InputTokens, 0), got.Uncached+got.CacheRead+got.CacheWrite+got.CacheWrite1h, "the parts sum to InputTokens")
			assert.Equal(t, tt.want.Uncached, tt.u.UncachedInputTokens(), "UncachedInputTokens")
		})
	}
}

func TestPricingCost(t *testing.T) {
	// Prices per million tokens: $1,000,000 of input makes one token cost
	// $1, so that the expected costs read as token counts.
	const mtok = 1e6
	anthropic := llm.Pricing{Input: 3 * mtok, Output: 15 * mtok, CacheRead: 0.1, CacheWrite: 1.25, CacheWrite1h: 2}
	tests := []struct {
		name string
		p    llm.Pricing
		u    llm.Usage
		want float64
	}{
		{"zero pricing", llm.Pricing{}, llm.Usage{InputTokens: 1000, OutputTokens: 10, CachedTokens: 500, CacheWriteTokens: 100}, 0},
		{"input and output", llm.Pricing{Input: mtok, Output: 2 * mtok}, llm.Usage{InputTokens: 100, OutputTokens: 10}, 100 + 20},
		// Zero shares: reads at DefaultCachedInputFraction, writes at the
		// input price.
		{"default shares", llm.Pricing{Input: mtok}, llm.Usage{InputTokens: 1000, CachedTokens: 600, CacheWriteTokens: 300, CacheWrite1hTokens: 100},
			100 + 0.1*600 + 300},
		// 100 uncached + 600 read at 0.1 + 200 written for 5 minutes at
		// 1.25 + 100 written for an hour at 2, times $3; 10 output at $15.
		{"anthropic", anthropic, llm.Usage{InputTokens: 1000, OutputTokens: 10, CachedTokens: 600, CacheWriteTokens: 300, CacheWrite1hTokens: 100},
			3*(100+60+250+200) + 150},
		{"hour's share defaults to the write share", llm.Pricing{Input: mtok, CacheRead: 0.5, CacheWrite: 1.25}, llm.Usage{InputTokens: 400, CachedTokens: 200, CacheWriteTokens: 200, CacheWrite1hTokens: 200},
			0.5*200 + 1.25*200},
		{"openai writes at the input price", llm.Pricing{Input: mtok, CacheRead: 0.1, CacheWrite: 1}, llm.Usage{InputTokens: 1000, CachedTokens: 900, CacheWriteTokens: 100},
			90 + 100},
		{"negative output", llm.Pricing{Input: mtok, Output: mtok}, llm.Usage{InputTokens: 10, OutputTokens: -5}, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.InDelta(t, tt.want, tt.p.Cost(tt.u), 1e-6, "Cost of %+v at %+v", tt.u, tt.p)
			assert.InDelta(t, tt.p.Cost(tt.u)-float64(max(tt.u.OutputTokens, 0))*tt.p.Output/1e6, tt.p.InputCost(tt.u), 1e-6, "InputCost is Cost without the output")
		})
	}
}

func TestPricingShares(t *testing.T) {
	read, write, hour := llm.Pricing{}.Shares()
	assert.Equal(t, []float64{llm.DefaultCachedInputFraction, 1, 1}, []float64{read, write, hour}, "shares of the zero Pricing")
	read, write, hour = llm.Pricing{CacheRead: 0.25, CacheWrite: 1.25, CacheWrite1h: 2}.Shares()
	assert.Equal(t, []float64{0.25, 1.25, 2}, []float64{read, write, hour}, "shares given")
}
