// Package export installs the OpenTelemetry tracer provider that sends the
// spans of package telemetry over OTLP/HTTP. It is apart from telemetry so
// that only a program's main path links the exporter and the SDK.
package export

import (
	"context"
	"os"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/codeagent/codeagent/internal/telemetry"
)

// Setup installs the tracer provider of a program (service is its name
// unless OTEL_SERVICE_NAME says otherwise) and returns what flushes and
// stops it at exit. Without an endpoint it installs nothing.
func Setup(ctx context.Context, service string) (shutdown func(context.Context) error, err error) {
	otel.SetTextMapPropagator(propagation.TraceContext{})
	if !telemetry.Enabled() {
		return func(context.Context) error { return nil }, nil
	}
	// The exporter reads the OTEL_EXPORTER_OTLP_* variables itself
	// (endpoint, headers, timeout, insecure).
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, err
	}
	if os.Getenv("OTEL_SERVICE_NAME") != "" {
		service = os.Getenv("OTEL_SERVICE_NAME")
	}
	res := resource.NewSchemaless(attribute.String("service.name", service))
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res),
		// Short batches: a watcher lives for hours and its task spans should
		// show while the run goes on.
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Second)))
	otel.SetTracerProvider(tp)
	return tp.Shutdown, nil
}
