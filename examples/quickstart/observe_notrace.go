//go:build !trace

package main

import (
	"errors"
	"io"

	"go.opentelemetry.io/otel/trace"
)

// newTracer fails: the OpenTelemetry SDK, which writes the spans, is built
// only with the tag "trace".
func newTracer(io.Writer) (trace.TracerProvider, func(), error) {
	return nil, nil, errors.New("-trace needs the OpenTelemetry SDK, built with the tag trace: go run -tags trace ./examples/quickstart -trace")
}
