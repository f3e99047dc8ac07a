package runtime

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
)

// TestTraceKeysAreTheConventions checks the attribute keys the runtime
// spells itself against the semantic conventions package.
func TestTraceKeysAreTheConventions(t *testing.T) {
	for _, k := range []struct{ ours, conv attribute.Key }{
		{keyOperation, semconv.GenAIOperationNameKey},
		{keyProvider, semconv.GenAIProviderNameKey},
		{keyRequestModel, semconv.GenAIRequestModelKey},
		{keyAgentName, semconv.GenAIAgentNameKey},
		{keyConversationID, semconv.GenAIConversationIDKey},
		{keyInputTokens, semconv.GenAIUsageInputTokensKey},
		{keyOutputTokens, semconv.GenAIUsageOutputTokensKey},
		{keyCacheReadTokens, semconv.GenAIUsageCacheReadInputTokensKey},
		{keyCacheWriteTokens, semconv.GenAIUsageCacheCreationInputTokensKey},
		{keyReasoningTokens, semconv.GenAIUsageReasoningOutputTokensKey},
		{keyFinishReasons, semconv.GenAIResponseFinishReasonsKey},
		{keyResponseID, semconv.GenAIResponseIDKey},
		{keyToolName, semconv.GenAIToolNameKey},
		{keyToolCallID, semconv.GenAIToolCallIDKey},
		{keyToolType, semconv.GenAIToolTypeKey},
		{keyToolArguments, semconv.GenAIToolCallArgumentsKey},
		{keyToolResult, semconv.GenAIToolCallResultKey},
		{keySystem, semconv.GenAISystemInstructionsKey},
		{keyInputMessages, semconv.GenAIInputMessagesKey},
		{keyOutputMessages, semconv.GenAIOutputMessagesKey},
		{keyErrorType, semconv.ErrorTypeKey},
		{keyHTTPStatus, semconv.HTTPResponseStatusCodeKey},
	} {
		assert.Equal(t, k.conv, k.ours, "key %q against the conventions", k.ours)
	}
	for _, op := range []struct {
		ours string
		conv attribute.KeyValue
	}{
		{"chat", semconv.GenAIOperationNameChat},
		{"invoke_agent", semconv.GenAIOperationNameInvokeAgent},
		{"execute_tool", semconv.GenAIOperationNameExecuteTool},
	} {
		assert.Equal(t, op.conv.Value.AsString(), op.ours, "operation %q against the conventions", op.ours)
	}
}

// TestObserveAllocatesNothingWhenUnset calls every observation site of a
// runner without a tracer provider or a logger, and of one with a no-op
// tracer provider (after the first step, which finds it a no-op).
func TestObserveAllocatesNothingWhenUnset(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  Config
	}{
		{"unset", Config{}},
		{"noop", Config{TracerProvider: noop.NewTracerProvider()}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := New(nil, nil, tt.cfg)
			ctx := context.Background()
			req := &llm.Request{}
			reply := &llm.Reply{}
			call := defs.ToolCall{ID: "c", Name: "t"}
			s := &Step{}
			err := context.Canceled
			allocs := testing.AllocsPerRun(100, func() {
				ctx := r.obs.stepStarted(ctx, 0)
				ctx, sp := r.obs.modelCalled(ctx, req)
				r.obs.modelReplied(sp, reply, nil)
				r.obs.retrying(ctx, 0, err, 0)
				ctx = r.obs.summarizing(ctx)
				tctx, ts := r.obs.toolStarted(ctx, call)
				r.obs.toolFailed(tctx, err)
				r.obs.toolEnded(ts, defs.ToolResult{})
				r.obs.committed(nil, nil)
				r.obs.stepEnded(ctx, s, nil)
			})
			assert.Equal(t, 0.0, allocs, "allocations per step")
			_, traced := r.obs.(*otelObserver)
			assert.Equal(t, tt.cfg.TracerProvider != nil, traced, "observer %v with Config %+v", r.obs, tt.cfg)
		})
	}
}
