package main

import (
	"errors"
	"flag"
	"io"
	"log/slog"

	"github.com/reprompt/reprompt/runtime"
)

// observe reads the command line and returns the run's configuration, and a
// function that flushes what it writes. Without flags the run is neither
// traced nor logged and the output is the steps alone.
//
//	go run -tags trace ./examples/quickstart -trace 2> trace.json
//
// writes the run's OpenTelemetry spans to stderr as JSON (the SDK's stdout
// exporter: no collector needed), one object per span as it ends. The SDK
// links net/http, so it is built only with the tag "trace" (see
// observe_trace.go), which keeps the default build's cold start short;
//
//	go run ./examples/quickstart -log
//
// writes the run's structured log to stderr as text.
func observe(args []string, stderr io.Writer) (cfg runtime.Config, flush func(), err error) {
	cfg = runtime.Config{MaxSteps: 20, Name: "quickstart"}
	flush = func() {}
	flags := flag.NewFlagSet("quickstart", flag.ContinueOnError)
	flags.SetOutput(stderr)
	traceOn := flags.Bool("trace", false, "write the run's OpenTelemetry spans to stderr, as JSON")
	logOn := flags.Bool("log", false, "write the run's structured log to stderr, as text")
	content := flags.Bool("content", false, "with -trace, record message content in the spans")
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			err = errors.New("usage: quickstart [-trace [-content]] [-log]")
		}
		return cfg, flush, err
	}
	if *traceOn {
		tp, shutdown, err := newTracer(stderr)
		if err != nil {
			return cfg, flush, err
		}
		cfg.TracerProvider, cfg.TraceContent, flush = tp, *content, shutdown
	}
	if *logOn {
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	return cfg, flush, nil
}
