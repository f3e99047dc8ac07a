package runtime_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// BenchmarkScenarioS1Observe is scenario S1 (100 steps) without tracing or
// logging, with a no-op tracer provider, with the SDK recording into an
// in-memory exporter, and with a JSON logger writing to io.Discard.
// Besides wall time it reports the process's CPU time per step
// (cpu-ns/step), steadier than wall time on a loaded machine. Compare the
// variants within one run:
//
//	go test ./runtime -run '^$' -bench ScenarioS1Observe -count 5
func BenchmarkScenarioS1Observe(b *testing.B) {
	const steps = 100
	exp := tracetest.NewInMemoryExporter()
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = sdk.Shutdown(context.Background()) }()
	for _, v := range []struct {
		name string
		cfg  runtime.Config
	}{
		{"none", runtime.Config{}},
		{"noop", runtime.Config{TracerProvider: noop.NewTracerProvider()}},
		{"sdk", runtime.Config{TracerProvider: sdk}},
		{"slog", runtime.Config{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}},
	} {
		b.Run(v.name, func(b *testing.B) {
			script := s1Script(steps)
			cfg := v.cfg
			cfg.MaxSteps = steps
			_, err := runtime.Run(context.Background(), snapshots.Script(script...), scenarioS1, cfg)
			require.NoError(b, err)
			benchSteps(b, steps, func() (*runtime.Result, error) {
				exp.Reset()
				return runtime.Run(context.Background(), snapshots.Script(script...), scenarioS1, cfg)
			})
		})
	}
}
