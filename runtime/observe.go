package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
)

// Tracing and logging (Config.TracerProvider, Config.Logger), behind one
// interface, observer: the step loop calls it at the boundaries of its
// stages, and only this file knows about spans and loggers.

// TracerName is the instrumentation scope of the runtime's spans.
const TracerName = "github.com/reprompt/reprompt/runtime"

// Attribute keys of the OpenTelemetry GenAI semantic conventions (as in
// go.opentelemetry.io/otel/semconv/v1.41.0, which the tests compare them
// with), spelled here so that the runtime imports only the API.
const (
	keyOperation        = attribute.Key("gen_ai.operation.name")
	keyProvider         = attribute.Key("gen_ai.provider.name")
	keyRequestModel     = attribute.Key("gen_ai.request.model")
	keyAgentName        = attribute.Key("gen_ai.agent.name")
	keyConversationID   = attribute.Key("gen_ai.conversation.id")
	keyInputTokens      = attribute.Key("gen_ai.usage.input_tokens")
	keyOutputTokens     = attribute.Key("gen_ai.usage.output_tokens")
	keyCacheReadTokens  = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	keyCacheWriteTokens = attribute.Key("gen_ai.usage.cache_creation.input_tokens")
	keyReasoningTokens  = attribute.Key("gen_ai.usage.reasoning.output_tokens")
	keyFinishReasons    = attribute.Key("gen_ai.response.finish_reasons")
	keyResponseID       = attribute.Key("gen_ai.response.id")
	keyToolName         = attribute.Key("gen_ai.tool.name")
	keyToolCallID       = attribute.Key("gen_ai.tool.call.id")
	keyToolType         = attribute.Key("gen_ai.tool.type")
	keyToolArguments    = attribute.Key("gen_ai.tool.call.arguments")
	keyToolResult       = attribute.Key("gen_ai.tool.call.result")
	keySystem           = attribute.Key("gen_ai.system_instructions")
	keyInputMessages    = attribute.Key("gen_ai.input.messages")
	keyOutputMessages   = attribute.Key("gen_ai.output.messages")
	keyErrorType        = attribute.Key("error.type")
	keyHTTPStatus       = attribute.Key("http.response.status_code")

	keyExceptionType    = attribute.Key("exception.type")
	keyExceptionMessage = attribute.Key("exception.message")
)

// Attribute keys of reprompt's own, under "reprompt.".
const (
	keyStep         = attribute.Key("reprompt.step")
	keySteps        = attribute.Key("reprompt.steps")
	keySummary      = attribute.Key("reprompt.summary")
	keyStepInput    = attribute.Key("reprompt.input_tokens")
	keyPrefixTokens = attribute.Key("reprompt.prefix_tokens")
	keyBilledInput  = attribute.Key("reprompt.billed_input")
	// The part of gen_ai.usage.cache_creation.input_tokens written to
	// entries that live an hour (Anthropic's 1-hour cache), which the
	// conventions do not name.
	keyCacheWrite1hTokens = attribute.Key("reprompt.usage.cache_creation_1h.input_tokens")
	keyToolCalls          = attribute.Key("reprompt.tool_calls")
	keyDisabled           = attribute.Key("reprompt.disabled")
	keyReminded           = attribute.Key("reprompt.reminded")
	keyCommitted          = attribute.Key("reprompt.committed")
	keyCompactions        = attribute.Key("reprompt.compactions")
	keyRecovered          = attribute.Key("reprompt.recovered")
	keyResumed            = attribute.Key("reprompt.resumed")
	keyInterrupted        = attribute.Key("reprompt.interrupted")
	keyDone               = attribute.Key("reprompt.done")
	keyEffectID           = attribute.Key("reprompt.effect.id")
	keyEffectSite         = attribute.Key("reprompt.effect.site")
	keyEffectPhase        = attribute.Key("reprompt.effect.phase")
	keyEffectReason       = attribute.Key("reprompt.effect.reason")
	keyEffectChanged      = attribute.Key("reprompt.effect.changed")
	keyEffectDetail       = attribute.Key("reprompt.effect.reason.detail")
	keyMessagesBefore     = attribute.Key("reprompt.messages.before")
	keyMessagesAfter      = attribute.Key("reprompt.messages.after")
	keyTokensBefore       = attribute.Key("reprompt.tokens.before")
	keyTokensAfter        = attribute.Key("reprompt.tokens.after")
	keyAttempt            = attribute.Key("reprompt.attempt")
	keyBackoff            = attribute.Key("reprompt.backoff")
)

// Span and event names.
const (
	spanStep        = "reprompt.step"
	eventEffect     = "reprompt.effect"
	eventCommit     = "reprompt.commit"
	eventCompaction = "reprompt.compaction"
	eventRetry      = "reprompt.retry"
)

// Attributes of a step span about approvals: the calls a step paused for,
// and those approved and denied by the record that completes it.
var (
	keyAwaiting = attribute.Key("reprompt.awaiting")
	keyApproved = attribute.Key("reprompt.approved")
	keyDenied   = attribute.Key("reprompt.denied")
)

// Attributes of the chat span of a request for a typed answer.
var (
	keyOutputType = attribute.Key("gen_ai.output.type")
	keyOutputMode = attribute.Key("reprompt.output.mode")
	keyOutputName = attribute.Key("reprompt.output.name")
)

// An observer is told what a run does at the boundaries of its stages (see
// "A step" in doc.go). It is the only part of the runtime that knows about
// tracing and logging: the step loop calls its methods and nothing else.
// New gives a runner an *otelObserver when Config.TracerProvider or
// Config.Logger is set, and noObserver otherwise.
//
// The rules every implementation follows:
//   - A method with nothing to record returns at once and allocates
//     nothing: the loop calls them at every step.
//   - stepStarted and stepEnded are called in pairs, by the goroutine that
//     drives the runner (Next); the other methods are called between them,
//     except toolFailed, which RunTool also calls outside any step. An
//     observer records nothing before its first stepStarted.
//   - toolStarted, toolFailed and toolEnded are called from the goroutines
//     of a reply's tool calls, concurrently; the other methods only from
//     the goroutine that drives the runner.
//   - A context an observer returns is the one the rest of the stage runs
//     with: it carries the stage's span to what the stage calls.
//   - The handles returned by modelCalled and toolStarted are passed back,
//     unchanged, to modelReplied and toolEnded; only the observer reads
//     them.
type observer interface {
	// stepStarted begins step n: the run's span at its first step, and the
	// step's span under it.
	stepStarted(ctx context.Context, n int) context.Context
	// stepEnded ends the step begun by stepStarted, with its record (nil
	// when the step failed before it had one) and its error, and ends the
	// run with it when err is not nil or s.Done.
	stepEnded(ctx context.Context, s *Step, err error)
	// modelCalled begins one attempt of a model call sending req.
	modelCalled(ctx context.Context, req *llm.Request) (context.Context, callSpan)
	// modelReplied ends the attempt begun by modelCalled, with the reply
	// or the error it got.
	modelReplied(sp callSpan, reply *llm.Reply, err error)
	// retrying records a model call that failed with err and is sent again
	// after backoff; attempt counts from 0.
	retrying(ctx context.Context, attempt int, err error, backoff time.Duration)
	// summarizing marks ctx as that of a completion an effect asked for
	// (effects.Step.Model), for the model call made with it.
	summarizing(ctx context.Context) context.Context
	// toolStarted begins tool call c.
	toolStarted(ctx context.Context, c defs.ToolCall) (context.Context, *toolSpan)
	// toolFailed records the Go error a tool call failed with, before it
	// becomes an error result; ctx is the one toolStarted returned. err
	// may be nil.
	toolFailed(ctx context.Context, err error)
	// toolEnded ends the call begun by toolStarted, with its result.
	toolEnded(ts *toolSpan, res defs.ToolResult)
	// committed records a rewrite of the transcript from one to the other
	// (read-only, both).
	committed(from, to []defs.Message)
}

// noObserver is the observer of a run without tracing or logging.
type noObserver struct{}

func (noObserver) stepStarted(ctx context.Context, _ int) context.Context { return ctx }
func (noObserver) stepEnded(context.Context, *Step, error)                {}

func (noObserver) modelCalled(ctx context.Context, _ *llm.Request) (context.Context, callSpan) {
	return ctx, callSpan{}
}

func (noObserver) modelReplied(callSpan, *llm.Reply, error)            {}
func (noObserver) retrying(context.Context, int, error, time.Duration) {}
func (noObserver) summarizing(ctx context.Context) context.Context     { return ctx }

func (noObserver) toolStarted(ctx context.Context, _ defs.ToolCall) (context.Context, *toolSpan) {
	return ctx, nil
}

func (noObserver) toolFailed(context.Context, error)    {}
func (noObserver) toolEnded(*toolSpan, defs.ToolResult) {}
func (noObserver) committed(_, _ []defs.Message)        {}

// newObserver returns the observer of r, made by New: noObserver unless
// its Config has a tracer provider or a logger. The observer uses nothing
// of r but its Stats and its token count.
func newObserver(r *Runner) observer {
	cfg := &r.cfg
	if cfg.TracerProvider == nil && cfg.Logger == nil {
		return noObserver{}
	}
	o := &otelObserver{tp: cfg.TracerProvider, log: cfg.Logger, content: cfg.TraceContent, agent: cfg.Name,
		conversation: cfg.SessionID, stats: r, count: r.count}
	if m, ok := r.model.(llm.ModelNamer); ok {
		o.model = m.ModelName()
	}
	if p, ok := r.model.(llm.ProviderNamer); ok {
		o.provider = p.ProviderName()
	}
	if rd, ok := r.model.(llm.Redactor); ok {
		o.redactor = rd
	}
	o.chatName = "chat"
	if o.model != "" {
		o.chatName += " " + o.model
	}
	if o.provider != "" {
		o.baseAttrs = append(o.baseAttrs, keyProvider.String(o.provider))
	}
	if o.model != "" {
		o.baseAttrs = append(o.baseAttrs, keyRequestModel.String(o.model))
	}
	if o.conversation != "" {
		o.baseAttrs = append(o.baseAttrs, keyConversationID.String(o.conversation))
	}
	return o
}

// otelObserver is the observer of a run with Config.TracerProvider or
// Config.Logger: it makes OpenTelemetry spans and slog records (see
// "Tracing" and "Logging" in doc.go).
type otelObserver struct {
	tp      trace.TracerProvider // until the first step, which takes its tracer
	tracer  trace.Tracer         // nil: no tracing
	log     *slog.Logger         // nil: no logging
	content bool
	stats   interface{ Stats() effects.RunStats } // the runner, for the run's totals
	count   func([]defs.Message) int              // the runner's token count
	// redactor, if not nil, is the model's (llm.Redactor): every text
	// recorded goes through it (see text).
	redactor llm.Redactor

	agent, model, provider, conversation string
	chatName                             string
	baseAttrs                            []attribute.KeyValue // provider and model

	run       trace.Span // from the first step to the end of the run
	step      trace.Span // the step under way
	stepN     int
	stepStart time.Time
	stepCtx   context.Context // the context of the step under way, for logs
	commits   int             // commits and compactions of the step under way
	compacts  int
}

// stepStarted begins a step: the run's span at the first one, and the
// step's span under it. The returned context carries the step's span.
func (o *otelObserver) stepStarted(ctx context.Context, n int) context.Context {
	if o.tp != nil {
		o.tracer, o.tp = o.tp.Tracer(TracerName), nil
	}
	o.stepN, o.stepStart, o.commits, o.compacts = n, time.Now(), 0, 0
	o.stepCtx = ctx
	if o.tracer == nil {
		return ctx
	}
	if o.run == nil {
		name := "invoke_agent"
		if o.agent != "" {
			name += " " + o.agent
		}
		var run trace.Span
		ctx, run = o.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal))
		if !run.IsRecording() && !run.SpanContext().IsValid() {
			// A no-op provider, and no span to propagate: the steps would
			// record nothing either, so the run is not traced at all (a
			// sampler that drops a span still gives it a valid context).
			run.End()
			o.tracer = nil
			return ctx
		}
		o.run = run
		if o.run.IsRecording() {
			o.run.SetAttributes(keyOperation.String("invoke_agent"))
			o.run.SetAttributes(o.baseAttrs...)
			if o.agent != "" {
				o.run.SetAttributes(keyAgentName.String(o.agent))
			}
		}
	} else {
		ctx = trace.ContextWithSpan(ctx, o.run)
	}
	ctx, o.step = o.tracer.Start(ctx, spanStep, trace.WithSpanKind(trace.SpanKindInternal))
	if o.step.IsRecording() {
		o.step.SetAttributes(keyStep.Int(n))
	}
	o.stepCtx = ctx
	return ctx
}

// stepEnded ends the step begun by stepStarted, and the run's span when
// the run ended with it.
func (o *otelObserver) stepEnded(ctx context.Context, s *Step, err error) {
	d := time.Since(o.stepStart)
	if o.step != nil {
		o.traceStep(s, err)
		o.step.End()
		o.step = nil
	}
	if o.log != nil {
		o.logStep(ctx, s, err, d)
	}
	o.stepCtx = nil
	if err != nil || s != nil && s.Done {
		o.endRun(ctx, err)
	}
}

func (o *otelObserver) traceStep(s *Step, err error) {
	sp := o.step
	if !sp.IsRecording() {
		return
	}
	if s != nil {
		sp.SetAttributes(
			keyStepInput.Int(s.InputTokens),
			keyPrefixTokens.Int(s.PrefixTokens),
			keyBilledInput.Float64(s.BilledInput),
		)
		if s.Reply != nil {
			sp.SetAttributes(keyToolCalls.Int(len(s.Reply.Message.ToolCalls)))
		}
		if len(s.Disabled) > 0 {
			sp.SetAttributes(keyDisabled.StringSlice(refStrings(s.Disabled)))
		}
		if len(s.Reminded) > 0 {
			sp.SetAttributes(keyReminded.StringSlice(refStrings(s.Reminded)))
		}
		if s.Committed {
			sp.SetAttributes(keyCommitted.Bool(true))
		}
		if o.compacts > 0 {
			sp.SetAttributes(keyCompactions.Int(o.compacts))
		}
		if s.Recovered {
			sp.SetAttributes(keyRecovered.Bool(true))
		}
		if s.Resumed {
			sp.SetAttributes(keyResumed.Bool(true))
		}
		if len(s.Interrupted) > 0 {
			sp.SetAttributes(keyInterrupted.StringSlice(s.Interrupted))
		}
		traceApproval(sp, s) // approval.go
		if s.Done {
			sp.SetAttributes(keyDone.Bool(true))
		}
		for _, e := range s.Effects {
			attrs := []attribute.KeyValue{
				keyEffectID.String(e.ID),
				keyEffectSite.String(e.Site),
				keyEffectPhase.String(e.Phase.String()),
				keyEffectReason.String(reasonKind(e.Reason.Kind)),
			}
			if len(e.Reason.Changes) > 0 {
				attrs = append(attrs, keyEffectChanged.StringSlice(changedNames(e.Reason.Changes)))
				if o.content {
					attrs = append(attrs, keyEffectDetail.String(o.text(e.Reason.String())))
				}
			}
			sp.AddEvent(eventEffect, trace.WithAttributes(attrs...))
		}
	}
	if err != nil {
		o.recordError(sp, err)
	}
}

// endRun ends the run's span with the run's totals.
func (o *otelObserver) endRun(ctx context.Context, err error) {
	st := o.stats.Stats()
	if o.run != nil {
		if o.run.IsRecording() {
			o.run.SetAttributes(
				keySteps.Int(st.Steps),
				keyInputTokens.Int(st.InputTokens),
				keyOutputTokens.Int(st.OutputTokens),
				keyCacheReadTokens.Int(st.CachedTokens),
				keyCacheWriteTokens.Int(st.CacheWriteTokens),
			)
			if st.CacheWrite1hTokens > 0 {
				o.run.SetAttributes(keyCacheWrite1hTokens.Int(st.CacheWrite1hTokens))
			}
			if err != nil {
				o.recordError(o.run, err)
			}
		}
		o.run.End()
		o.run = nil
	}
	if o.log != nil && o.log.Enabled(ctx, slog.LevelInfo) {
		attrs := o.logAttrs(nil)
		attrs = append(attrs,
			slog.Int("steps", st.Steps),
			slog.Int("input_tokens", st.InputTokens),
			slog.Int("output_tokens", st.OutputTokens),
			slog.Int("cached_tokens", st.CachedTokens),
			slog.Int("cache_write_tokens", st.CacheWriteTokens),
			slog.Duration("elapsed", st.Elapsed),
		)
		if st.Cost != 0 {
			attrs = append(attrs, slog.Float64("cost", st.Cost))
		}
		if err != nil {
			attrs = append(attrs, slog.String("error_type", errorType(err)))
		}
		o.log.LogAttrs(ctx, slog.LevelInfo, "run ended", attrs...)
	}
}

// logAttrs starts the attributes of a record with the agent's name.
func (o *otelObserver) logAttrs(attrs []slog.Attr) []slog.Attr {
	if o.agent != "" {
		attrs = append(attrs, slog.String("agent", o.agent))
	}
	return attrs
}

func (o *otelObserver) logStep(ctx context.Context, s *Step, err error, d time.Duration) {
	if s != nil && (err == nil || s.Reply != nil) && o.log.Enabled(ctx, slog.LevelInfo) {
		attrs := o.logAttrs(make([]slog.Attr, 0, 16))
		attrs = append(attrs,
			slog.Int("step", s.Number),
			slog.Int("input_tokens", s.InputTokens),
			slog.Int("prefix_tokens", s.PrefixTokens),
			slog.Float64("billed_input", s.BilledInput),
		)
		if s.Reply != nil {
			u := s.Reply.Usage
			attrs = append(attrs, slog.Group("usage",
				slog.Int("input", u.InputTokens), slog.Int("output", u.OutputTokens), slog.Int("cached", u.CachedTokens),
				slog.Int("cache_write", u.CacheWriteTokens)))
			calls := make([]string, len(s.Reply.Message.ToolCalls))
			for i, c := range s.Reply.Message.ToolCalls {
				calls[i] = c.Name
			}
			attrs = append(attrs, slog.Any("tool_calls", calls))
		}
		ran := make([]string, len(s.Effects))
		for i, e := range s.Effects {
			ran[i] = effectSummary(e)
		}
		attrs = append(attrs, slog.Any("effects", ran))
		if len(s.Disabled) > 0 {
			attrs = append(attrs, slog.Any("disabled", refStrings(s.Disabled)))
		}
		if len(s.Reminded) > 0 {
			attrs = append(attrs, slog.Any("reminded", refStrings(s.Reminded)))
		}
		if s.Committed {
			attrs = append(attrs, slog.Bool("committed", true))
		}
		if s.Resumed {
			attrs = append(attrs, slog.Bool("resumed", true))
		}
		attrs = appendApprovalAttrs(attrs, s) // approval.go
		attrs = append(attrs, slog.Duration("duration", d))
		if s.Done {
			attrs = append(attrs, slog.Bool("done", true))
		}
		o.log.LogAttrs(ctx, slog.LevelInfo, "step", attrs...)
	}
	if s != nil && s.Recovered {
		o.log.LogAttrs(ctx, slog.LevelWarn, "request too long for the context window: recovered",
			append(o.logAttrs(nil), slog.Int("step", s.Number), slog.Int("input_tokens", s.InputTokens))...)
	}
	if err != nil {
		o.log.LogAttrs(ctx, slog.LevelError, "step failed",
			append(o.logAttrs(nil), slog.Int("step", o.stepN), slog.String("error", o.text(err.Error())), slog.String("error_type", errorType(err)))...)
	}
}

// committed records a rewrite of the transcript from one to the other: a
// compaction when it has fewer tokens.
func (o *otelObserver) committed(from, to []defs.Message) {
	before, after := o.count(from), o.count(to)
	o.commits++
	compaction := after < before
	if compaction {
		o.compacts++
	}
	if o.step != nil && o.step.IsRecording() {
		name := eventCommit
		if compaction {
			name = eventCompaction
		}
		o.step.AddEvent(name, trace.WithAttributes(
			keyMessagesBefore.Int(len(from)), keyMessagesAfter.Int(len(to)),
			keyTokensBefore.Int(before), keyTokensAfter.Int(after)))
	}
	if o.log != nil {
		level, msg := slog.LevelDebug, "transcript rewritten"
		if compaction {
			level, msg = slog.LevelWarn, "transcript compacted"
		}
		o.log.LogAttrs(o.stepCtx, level, msg, append(o.logAttrs(nil),
			slog.Int("step", o.stepN),
			slog.Int("messages_before", len(from)), slog.Int("messages_after", len(to)),
			slog.Int("tokens_before", before), slog.Int("tokens_after", after))...)
	}
}

// summaryKey marks the context of a completion asked by an effect.
type summaryKey struct{}

// summarizing marks ctx as that of a completion asked by an effect (a
// summary), for the model call's span.
func (o *otelObserver) summarizing(ctx context.Context) context.Context {
	if o.tracer == nil {
		return ctx
	}
	return context.WithValue(ctx, summaryKey{}, true)
}

// callSpan is the span of one model call (one attempt), from modelCalled
// to modelReplied; the zero callSpan has none.
type callSpan struct{ sp trace.Span }

// modelCalled begins the span of one model call (one attempt).
func (o *otelObserver) modelCalled(ctx context.Context, req *llm.Request) (context.Context, callSpan) {
	if o.tracer == nil {
		return ctx, callSpan{}
	}
	ctx, sp := o.tracer.Start(ctx, o.chatName, trace.WithSpanKind(trace.SpanKindClient))
	if !sp.IsRecording() {
		return ctx, callSpan{sp}
	}
	sp.SetAttributes(keyOperation.String("chat"), keyStep.Int(o.stepN))
	sp.SetAttributes(o.baseAttrs...)
	if ctx.Value(summaryKey{}) != nil {
		sp.SetAttributes(keySummary.Bool(true))
	}
	if out := req.Output; out != nil {
		sp.SetAttributes(keyOutputType.String("json"), keyOutputMode.String(string(out.Mode)), keyOutputName.String(out.Name))
	}
	if o.content {
		if req.System != "" {
			sp.SetAttributes(keySystem.String(jsonString([]part{{Type: "text", Content: o.text(req.System)}})))
		}
		sp.SetAttributes(keyInputMessages.String(jsonString(o.contentMessages(req.Messages, ""))))
	}
	return ctx, callSpan{sp}
}

// modelReplied ends the span begun by modelCalled.
func (o *otelObserver) modelReplied(cs callSpan, reply *llm.Reply, err error) {
	sp := cs.sp
	if sp == nil {
		return
	}
	if sp.IsRecording() {
		if err != nil {
			o.recordError(sp, err)
		} else {
			u := reply.Usage
			sp.SetAttributes(
				keyInputTokens.Int(u.InputTokens),
				keyOutputTokens.Int(u.OutputTokens),
				keyCacheReadTokens.Int(u.CachedTokens),
				keyCacheWriteTokens.Int(u.CacheWriteTokens),
			)
			if u.CacheWrite1hTokens > 0 {
				sp.SetAttributes(keyCacheWrite1hTokens.Int(u.CacheWrite1hTokens))
			}
			if u.ReasoningTokens > 0 {
				sp.SetAttributes(keyReasoningTokens.Int(u.ReasoningTokens))
			}
			if reply.FinishReason != "" {
				sp.SetAttributes(keyFinishReasons.StringSlice([]string{string(reply.FinishReason)}))
			}
			if reply.ID != "" {
				sp.SetAttributes(keyResponseID.String(o.text(reply.ID)))
			}
			if o.content {
				msg := reply.Message
				msg.Role = defs.RoleAssistant
				sp.SetAttributes(keyOutputMessages.String(jsonString(o.contentMessages([]defs.Message{msg}, string(reply.FinishReason)))))
			}
		}
	}
	sp.End()
}

// retrying records a model call that failed and is sent again after d.
func (o *otelObserver) retrying(ctx context.Context, attempt int, err error, d time.Duration) {
	if sp := trace.SpanFromContext(ctx); o.tracer != nil && sp.IsRecording() {
		sp.AddEvent(eventRetry, trace.WithAttributes(keyAttempt.Int(attempt+1), keyBackoff.String(d.String()),
			keyErrorType.String(errorType(err))))
	}
	if o.log != nil {
		o.log.LogAttrs(ctx, slog.LevelWarn, "model call failed: retrying", append(o.logAttrs(nil),
			slog.Int("step", o.stepN), slog.Int("attempt", attempt+1), slog.Duration("backoff", d),
			slog.String("error", o.text(err.Error())), slog.String("error_type", errorType(err)))...)
	}
}

// toolSpan is the span of one tool call, carried by its context so that
// toolFailed finds it.
type toolSpan struct {
	sp      trace.Span
	errType string // set by toolFailed
}

type toolSpanKey struct{}

// toolStarted begins the span of one tool call.
func (o *otelObserver) toolStarted(ctx context.Context, c defs.ToolCall) (context.Context, *toolSpan) {
	if o.tracer == nil {
		return ctx, nil
	}
	ctx, sp := o.tracer.Start(ctx, "execute_tool "+c.Name, trace.WithSpanKind(trace.SpanKindInternal))
	if !sp.IsRecording() {
		sp.End() // nothing to record; the context still carries it
		return ctx, nil
	}
	sp.SetAttributes(
		keyOperation.String("execute_tool"),
		keyToolName.String(c.Name),
		keyToolCallID.String(c.ID),
		keyToolType.String("function"),
		keyStep.Int(o.stepN),
	)
	if o.content {
		sp.SetAttributes(keyToolArguments.String(o.text(string(c.Arguments))))
	}
	ts := &toolSpan{sp: sp}
	return context.WithValue(ctx, toolSpanKey{}, ts), ts
}

// toolFailed records the Go error a tool call failed with, before it
// becomes an error result.
func (o *otelObserver) toolFailed(ctx context.Context, err error) {
	if err == nil || o.tracer == nil {
		return
	}
	if ts, ok := ctx.Value(toolSpanKey{}).(*toolSpan); ok {
		o.recordException(ts.sp, err)
		ts.errType = errorType(err)
	}
}

// toolEnded ends the span begun by toolStarted.
func (o *otelObserver) toolEnded(ts *toolSpan, res defs.ToolResult) {
	if ts == nil {
		return
	}
	if o.content {
		ts.sp.SetAttributes(keyToolResult.String(o.text(res.Content)))
	}
	if res.IsError {
		typ := ts.errType
		if typ == "" {
			typ = "tool_error" // refused or invalid before the tool ran
		}
		ts.sp.SetAttributes(keyErrorType.String(typ))
		ts.sp.SetStatus(codes.Error, o.text(res.Content))
	}
	ts.sp.End()
}

// text returns s as the observer records it: without the model's secrets
// when the model is an llm.Redactor.
func (o *otelObserver) text(s string) string {
	if o.redactor == nil || s == "" {
		return s
	}
	return o.redactor.Redact(s)
}

// recordException records err as the span's exception event, as
// trace.Span.RecordError does, with its message redacted (see text).
func (o *otelObserver) recordException(sp trace.Span, err error) string {
	msg := err.Error()
	red := o.text(msg)
	if red == msg {
		sp.RecordError(err)
		return msg
	}
	sp.AddEvent("exception", trace.WithAttributes(
		keyExceptionType.String(exceptionType(err)),
		keyExceptionMessage.String(red),
	))
	return red
}

// exceptionType names err's type as trace.Span.RecordError does in
// exception.type.
func exceptionType(err error) string {
	t := reflect.TypeOf(err)
	if t.PkgPath() == "" && t.Name() == "" {
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
}

// recordError sets the span's status to Error and records err (redacted,
// see text), its type in error.type.
func (o *otelObserver) recordError(sp trace.Span, err error) {
	msg := o.recordException(sp, err)
	sp.SetStatus(codes.Error, msg)
	sp.SetAttributes(keyErrorType.String(errorType(err)))
	var me *llm.ModelError
	if errors.As(err, &me) && me.StatusCode != 0 {
		sp.SetAttributes(keyHTTPStatus.Int(me.StatusCode))
	}
}

// errorType names the kind of err for error.type and logs: the sentinel it
// is, or the Go type of the most specific typed error it wraps.
func errorType(err error) string {
	switch {
	case errors.Is(err, ErrMaxSteps):
		return "runtime.ErrMaxSteps"
	case errors.Is(err, context.Canceled):
		return "context.Canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "context.DeadlineExceeded"
	}
	var me *llm.ModelError
	if errors.As(err, &me) {
		return "*llm.ModelError"
	}
	// Look through the errors that only add context.
	for {
		var next error
		switch e := err.(type) {
		case *StepError:
			next = e.Err
		default:
			if t := fmt.Sprintf("%T", err); t == "*fmt.wrapError" {
				next = errors.Unwrap(err)
			}
		}
		if next == nil {
			return fmt.Sprintf("%T", err)
		}
		err = next
	}
}

func refStrings(refs []defs.Ref) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.String()
	}
	return out
}

func reasonKind(k effects.ReasonKind) string {
	switch k {
	case effects.ReasonFirst:
		return "first"
	case effects.ReasonAlways:
		return "always"
	case effects.ReasonChanged:
		return "changed"
	case effects.ReasonRecovery:
		return "recovery"
	}
	return "unknown"
}

func changedNames(cs []effects.Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
		if c.Name == "" {
			out[i] = "deps[" + strconv.Itoa(c.Index) + "]"
		}
	}
	return out
}

// effectSummary is "ID reason" for a log record: the reason's kind and the
// names of the dependencies that changed, without their values.
func effectSummary(e effects.Ran) string {
	s := e.ID + " " + reasonKind(e.Reason.Kind)
	if len(e.Reason.Changes) > 0 {
		s += ":"
		for i, n := range changedNames(e.Reason.Changes) {
			if i > 0 {
				s += ","
			}
			s += " " + n
		}
	}
	if e.Phase == effects.AfterReply {
		s += " (after reply)"
	}
	return s
}

// Message content in the JSON shape of gen_ai.input.messages and
// gen_ai.output.messages.
type contentMessage struct {
	Role         string `json:"role"`
	Parts        []part `json:"parts"`
	Name         string `json:"name,omitempty"`
	FinishReason string `json:"finish_reason,omitempty"`
}

type part struct {
	Type      string          `json:"type"`
	Content   string          `json:"content,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Response  string          `json:"response,omitempty"`
}

// contentMessages returns msgs in the shape of gen_ai.input.messages, each
// text redacted (see text).
func (o *otelObserver) contentMessages(msgs []defs.Message, finish string) []contentMessage {
	out := make([]contentMessage, 0, len(msgs))
	for _, m := range msgs {
		cm := contentMessage{Role: string(m.Role), Parts: []part{}, FinishReason: finish}
		if m.Reasoning != "" {
			cm.Parts = append(cm.Parts, part{Type: "reasoning", Content: o.text(m.Reasoning)})
		}
		switch {
		case m.Role == defs.RoleTool:
			cm.Parts = append(cm.Parts, part{Type: "tool_call_response", ID: o.text(m.ToolCallID), Response: o.text(m.Content)})
		case m.Content != "":
			cm.Parts = append(cm.Parts, part{Type: "text", Content: o.text(m.Content)})
		}
		for _, c := range m.ToolCalls {
			args := c.Arguments
			if o.redactor != nil {
				args = json.RawMessage(o.text(string(args)))
			}
			if !json.Valid(args) {
				args = nil
			}
			cm.Parts = append(cm.Parts, part{Type: "tool_call", ID: o.text(c.ID), Name: o.text(c.Name), Arguments: args})
		}
		out = append(out, cm)
	}
	return out
}

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// decidedIDs returns the ids of the calls approved (or denied) in ds.
func decidedIDs(ds []Decision, approved bool) []string {
	var ids []string
	for _, d := range ds {
		if d.Approved == approved {
			ids = append(ids, d.CallID)
		}
	}
	return ids
}

func pendingIDs(as []PendingApproval) []string {
	ids := make([]string, len(as))
	for i, a := range as {
		ids[i] = a.CallID
	}
	return ids
}

// traceApproval sets the approval attributes of a step span.
func traceApproval(sp trace.Span, s *Step) {
	if len(s.Awaiting) > 0 {
		sp.SetAttributes(keyAwaiting.StringSlice(pendingIDs(s.Awaiting)))
	}
	if ids := decidedIDs(s.Decisions, true); len(ids) > 0 {
		sp.SetAttributes(keyApproved.StringSlice(ids))
	}
	if ids := decidedIDs(s.Decisions, false); len(ids) > 0 {
		sp.SetAttributes(keyDenied.StringSlice(ids))
	}
}

// appendApprovalAttrs adds the approval attributes of a step's log record.
func appendApprovalAttrs(attrs []slog.Attr, s *Step) []slog.Attr {
	if len(s.Awaiting) > 0 {
		attrs = append(attrs, slog.Any("awaiting", pendingIDs(s.Awaiting)))
	}
	if ids := decidedIDs(s.Decisions, true); len(ids) > 0 {
		attrs = append(attrs, slog.Any("approved", ids))
	}
	if ids := decidedIDs(s.Decisions, false); len(ids) > 0 {
		attrs = append(attrs, slog.Any("denied", ids))
	}
	return attrs
}
