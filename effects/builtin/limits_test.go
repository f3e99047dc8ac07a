package builtin_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

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
			if !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if err != nil {
				var le *builtin.LimitError
				if !errors.As(err, &le) || le.Max == 0 || le.Used < le.Max {
					t.Errorf("LimitError = %+v", le)
				}
			}
			mods := s.Mods()
			if mods.Committed {
				t.Fatal("Limits committed")
			}
			if tt.warn == nil {
				if mods.Viewed {
					t.Fatalf("unexpected wrap-up: %q", s.Messages()[len(s.Messages())-1].Content)
				}
				return
			}
			msgs := s.Messages()
			if !mods.Viewed || len(msgs) != 2 || msgs[1].Role != defs.RoleUser {
				t.Fatalf("no wrap-up message: %+v", msgs)
			}
			if len(s.Transcript()) != 1 {
				t.Fatal("the wrap-up was committed")
			}
			for _, w := range tt.warn {
				if !strings.Contains(msgs[1].Content, w) {
					t.Errorf("wrap-up lacks %q:\n%s", w, msgs[1].Content)
				}
			}
			if !strings.Contains(msgs[1].Content, "Finish now") {
				t.Errorf("wrap-up does not ask to finish:\n%s", msgs[1].Content)
			}
		})
	}
}

func TestLimitErrorMessage(t *testing.T) {
	err := error(&builtin.LimitError{Limit: builtin.LimitCost, Used: 1.25, Max: 1})
	// The message is the contract here: how a LimitError prints.
	if got := err.Error(); got != "cost limit reached: used $1.2500 of $1.0000" {
		t.Errorf("Error() = %q", got)
	}
	wrapped := &effects.Error{ID: "key:limits#0", Err: err}
	if !errors.Is(wrapped, builtin.ErrCostLimit) || errors.Is(wrapped, builtin.ErrTimeLimit) {
		t.Error("errors.Is through *effects.Error")
	}
}

func TestLimitsCustomWarn(t *testing.T) {
	s := newStep(0, []defs.Message{user("task")}, 0)
	s.Stats = effects.RunStats{Steps: 5}
	if err := builtin.Limits(builtin.LimitsConfig{MaxIterations: 10, Warn: 0.5, WrapUp: "Stop soon."})(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if got := s.Messages(); len(got) != 2 || !strings.HasPrefix(got[1].Content, "Stop soon.\nLimits close to being reached:\n- iterations") {
		t.Fatalf("messages = %+v", got)
	}
	s = newStep(0, []defs.Message{user("task")}, 0)
	s.Stats = effects.RunStats{Steps: 9}
	if err := builtin.Limits(builtin.LimitsConfig{MaxIterations: 10, Warn: 1})(context.Background(), s); err != nil || s.Mods().Viewed {
		t.Fatal("Warn 1 warned")
	}
}
