package builtin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
)

// DefaultWarn is the fraction of a limit at which Limits asks the model to
// wrap up.
const DefaultWarn = 0.8

// LimitKind names a limit.
type LimitKind string

// The limits of LimitsConfig.
const (
	LimitIterations LimitKind = "iterations"
	LimitTokens     LimitKind = "tokens"
	LimitCost       LimitKind = "cost"
	LimitTime       LimitKind = "time"
)

// Sentinels a *LimitError unwraps to; test them with errors.Is (through the
// runtime's *effects.Error, which unwraps too).
var (
	ErrIterationLimit = errors.New("iteration limit reached")
	ErrTokenLimit     = errors.New("token limit reached")
	ErrCostLimit      = errors.New("cost limit reached")
	ErrTimeLimit      = errors.New("time limit reached")
)

// LimitError is a run stopped by Limits. Used and Max are in the limit's
// unit: model calls, tokens, US dollars, seconds.
type LimitError struct {
	Limit LimitKind
	Used  float64
	Max   float64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%v: used %s of %s", e.Unwrap(), formatLimit(e.Limit, e.Used), formatLimit(e.Limit, e.Max))
}

// Unwrap returns the sentinel of e.Limit.
func (e *LimitError) Unwrap() error {
	switch e.Limit {
	case LimitIterations:
		return ErrIterationLimit
	case LimitTokens:
		return ErrTokenLimit
	case LimitCost:
		return ErrCostLimit
	case LimitTime:
		return ErrTimeLimit
	}
	return errors.New("limit reached")
}

func formatLimit(k LimitKind, v float64) string {
	switch k {
	case LimitCost:
		return fmt.Sprintf("$%.4f", v)
	case LimitTime:
		return (time.Duration(v * float64(time.Second))).Round(time.Millisecond).String()
	case LimitTokens:
		return fmt.Sprintf("%.0f tokens", v)
	}
	return fmt.Sprintf("%.0f model calls", v)
}

// LimitsConfig configures Limits. A zero limit is no limit.
type LimitsConfig struct {
	// MaxIterations is the most model calls (steps) of the run.
	MaxIterations int
	// MaxTokens is the most input plus output tokens of the run.
	MaxTokens int
	// MaxCost is the most estimated cost, in US dollars (Step.Stats.Cost).
	MaxCost float64
	// MaxTime is the most wall time of the run's steps (Step.Stats.Elapsed:
	// not the time between a conversation's turns, nor while it is paused
	// for a decision or an answer).
	MaxTime time.Duration
	// Warn is the fraction of any limit from which the model is asked to
	// wrap up. Zero means DefaultWarn; 1 or more never warns.
	Warn float64
	// WrapUp, if set, replaces the start of the wrap-up message; the limits
	// reached follow it.
	WrapUp string
}

// Limits returns an effect (kind limits, to register in the BeforeCall
// phase) that stops a run at hard limits and asks the model to finish
// before them.
//
// It reads Step.Stats, the run's totals before this step's model call. The
// call about to be made counts as an iteration: with MaxIterations 10 the
// tenth call is made and the eleventh is refused. Tokens, cost and time are
// refused once the totals reached their limit.
//
// When the usage of any limit is at or above Warn of it, a wrap-up message
// (role user) is appended to this step's request (a view, so the cached
// prefix is kept): it says which limits are close and asks the model to
// finish now. At a hard limit the effect returns a *LimitError, which ends
// the run; errors.Is(err, ErrTokenLimit) and the like tell which.
func Limits(cfg LimitsConfig) effects.Func {
	warn := cfg.Warn
	if warn <= 0 {
		warn = DefaultWarn
	}
	return func(ctx context.Context, s *effects.Step) error {
		st := s.Stats
		type check struct {
			kind      LimitKind
			used, max float64
		}
		checks := [...]check{
			{LimitIterations, float64(st.Steps + 1), float64(cfg.MaxIterations)},
			{LimitTokens, float64(st.InputTokens + st.OutputTokens), float64(cfg.MaxTokens)},
			{LimitCost, st.Cost, cfg.MaxCost},
			{LimitTime, st.Elapsed.Seconds(), cfg.MaxTime.Seconds()},
		}
		var close []string
		for _, c := range checks {
			if c.max <= 0 {
				continue
			}
			over := c.used >= c.max
			if c.kind == LimitIterations {
				over = c.used > c.max
			}
			if over {
				used := c.used
				if c.kind == LimitIterations {
					used = float64(st.Steps)
				}
				return &LimitError{Limit: c.kind, Used: used, Max: c.max}
			}
			if warn < 1 && c.used >= warn*c.max {
				close = append(close, fmt.Sprintf("%s: %s of %s used", c.kind, formatLimit(c.kind, c.used), formatLimit(c.kind, c.max)))
			}
		}
		if len(close) > 0 {
			s.AppendMessages(defs.UserMessage(wrapUp(cfg.WrapUp, close)))
		}
		return nil
	}
}

func wrapUp(lead string, close []string) string {
	if lead == "" {
		lead = "You are close to the limits of this run. Finish now: wrap up your work, call no more tools unless " +
			"one is needed to finish, and give your final answer. The run will be stopped at the limit."
	}
	return lead + "\nLimits close to being reached:\n- " + strings.Join(close, "\n- ")
}
