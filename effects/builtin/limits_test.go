package builtin_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/effects/builtin"
)

func TestLimits(t *testing.T) {
	cfg := builtin.LimitsConfig{MaxIterations: 10, MaxTokens: 1000, MaxCost: 1, MaxTime: time.Minute}
	tests := []struct {
		name  string
		stats effects.RunStats
		warn  []string // limits named in the wrap-up message; nil: none
		err   error
	}{
		{"fresh", effects.RunStats{}, nil, nil},
		{"iterations warn", effects.RunStats{Steps: 7}, []string{"iterations: 8 model calls of 10"}, nil},
		{"last iteration", effects.RunStats{Steps: 9}, []string{"iterations"}, nil},
		{"iterations over", effects.RunStats{Steps: 10}, nil, builtin.ErrIterationLimit},
		{"tokens warn", effects.RunStats{InputTokens: 700, OutputTokens: 100}, []string{"tokens: 800 tokens of 1000 tokens"}, nil},
		{"tokens over", effects.RunStats{InputTokens: 900, OutputTokens: 100}, nil, builtin.ErrTokenLimit},
		{"cost warn", effects.RunStats{Cost: 0.85}, []string{"cost: $0.8500 of $1.0000"}, nil},
		{"cost over", effects.RunStats{Cost: 1.2}, nil, builtin.ErrCostLimit},
		{"time warn", effects.RunStats{Elapsed: 50 * time.Second}, []string{"time: 50s of 1m0s"}, nil},
		{"time over", effects.RunStats{Elapsed: 2 * time.Minute}, nil, builtin.ErrTimeLimit},
		{"two warn", effects.RunStats{Steps: 8, Cost: 0.9}, []string{"iterations", "cost"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			transcript := []defs.Message{user("task")}
			s := newStep(tt.stats.Steps, transcript, 0)
			s.Stats = tt.stats
			err := builtin.Limits(cfg)(context.Background(), s)
			require.ErrorIs(t, err, tt.err, "err = %v, want %v", err, tt.err)
			require.Equal(t, tt.err == nil, err == nil, "err = %v, want %v", err, tt.err)
			if err != nil {
				var le *builtin.LimitError
				if assert.ErrorAs(t, err, &le, "err = %v", err) {
					assert.NotZero(t, le.Max, "LimitError = %+v", le)
					assert.GreaterOrEqual(t, le.Used, le.Max, "LimitError = %+v", le)
				}
			}
			mods := s.Mods()
			require.False(t, mods.Committed, "Limits committed")
			if tt.warn == nil {
				require.False(t, mods.Viewed, "unexpected wrap-up: %q", s.Messages()[len(s.Messages())-1].Content)
				return
			}
			msgs := s.Messages()
			require.True(t, mods.Viewed, "no wrap-up message: %+v", msgs)
			require.Len(t, msgs, 2, "no wrap-up message: %+v", msgs)
			require.Equal(t, defs.RoleUser, msgs[1].Role, "no wrap-up message: %+v", msgs)
			require.Len(t, s.Transcript(), 1, "the wrap-up was committed")
			for _, w := range tt.warn {
				assert.Contains(t, msgs[1].Content, w, "wrap-up lacks %q:\n%s", w, msgs[1].Content)
			}
			assert.Contains(t, msgs[1].Content, "Finish now", "wrap-up does not ask to finish:\n%s", msgs[1].Content)
		})
	}
}

func TestLimitErrorMessage(t *testing.T) {
	err := error(&builtin.LimitError{Limit: builtin.LimitCost, Used: 1.25, Max: 1})
	// The message is the contract here: how a LimitError prints.
	got := err.Error()
	assert.Equal(t, "cost limit reached: used $1.2500 of $1.0000", got, "Error() = %q", got)
	wrapped := &effects.Error{ID: "key:limits#0", Err: err}
	assert.ErrorIs(t, wrapped, builtin.ErrCostLimit, "errors.Is through *effects.Error")
	assert.NotErrorIs(t, wrapped, builtin.ErrTimeLimit, "errors.Is through *effects.Error")
}

func TestLimitsCustomWarn(t *testing.T) {
	s := newStep(0, []defs.Message{user("task")}, 0)
	s.Stats = effects.RunStats{Steps: 5}
	require.NoError(t, builtin.Limits(builtin.LimitsConfig{MaxIterations: 10, Warn: 0.5, WrapUp: "Stop soon."})(context.Background(), s))
	got := s.Messages()
	require.Len(t, got, 2, "messages = %+v", got)
	require.True(t, strings.HasPrefix(got[1].Content, "Stop soon.\nLimits close to being reached:\n- iterations"), "messages = %+v", got)
	s = newStep(0, []defs.Message{user("task")}, 0)
	s.Stats = effects.RunStats{Steps: 9}
	require.NoError(t, builtin.Limits(builtin.LimitsConfig{MaxIterations: 10, Warn: 1})(context.Background(), s), "Warn 1")
	require.False(t, s.Mods().Viewed, "Warn 1 warned")
}
