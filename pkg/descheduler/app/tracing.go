package app

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.17.0"
	"google.golang.org/grpc/credentials"
	"k8s.io/component-base/tracing"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	"k8s.io/klog/v2"
)

// DefaultOtelServiceName is the service.name of the traces when --otel-service-name is not given.
const DefaultOtelServiceName = "accord-descheduler"

// TracingOptions are upstream's --otel-* flags.
type TracingOptions struct {
	// CollectorEndpoint is the OTLP/gRPC collector (host:port); empty turns tracing off.
	CollectorEndpoint string
	// TransportCACert is a PEM file of the CA that signed the collector's certificate; when set,
	// the connection uses TLS, otherwise it is plain gRPC.
	TransportCACert string
	// ServiceName and ServiceNamespace are the service.name and service.namespace resource
	// attributes of the traces.
	ServiceName      string
	ServiceNamespace string
	// SampleRate is the fraction of cycles traced (0 to 1), unless a parent span decides.
	SampleRate float64
	// FallbackToNoOp makes a tracing set-up error a logged warning (tracing off) instead of a
	// start-up error.
	FallbackToNoOp bool
}

func (o *TracingOptions) validate() []error {
	var errs []error
	if o.SampleRate < 0 || o.SampleRate > 1 {
		errs = append(errs, fmt.Errorf("--otel-sample-rate: %v must be between 0 and 1", o.SampleRate))
	}
	if o.CollectorEndpoint == "" && o.TransportCACert != "" {
		errs = append(errs, errors.New("--otel-transport-ca-cert needs --otel-collector-endpoint"))
	}
	return errs
}

// newTracerProvider builds the tracer provider with component-base's tracing.NewProvider (OTLP
// over gRPC, batched, parent-based ratio sampling). Without an endpoint it is a no-op provider.
func (o *TracingOptions) newTracerProvider(ctx context.Context) (tracing.TracerProvider, error) {
	if o.CollectorEndpoint == "" {
		return tracing.NewNoopTracerProvider(), nil
	}
	tp, err := o.provider(ctx)
	if err != nil {
		if !o.FallbackToNoOp {
			return nil, fmt.Errorf("tracing: %w", err)
		}
		klog.FromContext(ctx).Error(err, "Setting up tracing failed; tracing is off (--otel-fallback-no-op-on-error)")
		return tracing.NewNoopTracerProvider(), nil
	}
	klog.FromContext(ctx).Info("Tracing", "collector", o.CollectorEndpoint, "tls", o.TransportCACert != "",
		"serviceName", o.ServiceName, "sampleRate", o.SampleRate)
	return tp, nil
}

func (o *TracingOptions) provider(ctx context.Context) (tracing.TracerProvider, error) {
	var grpcOpts []otlptracegrpc.Option
	if o.TransportCACert != "" {
		pem, err := os.ReadFile(o.TransportCACert)
		if err != nil {
			return nil, fmt.Errorf("--otel-transport-ca-cert: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--otel-transport-ca-cert: %s holds no PEM certificate", o.TransportCACert)
		}
		// Credentials take precedence over the insecure transport tracing.NewProvider asks for.
		grpcOpts = append(grpcOpts, otlptracegrpc.WithTLSCredentials(credentials.NewClientTLSFromCert(pool, "")))
	}
	name := o.ServiceName
	if name == "" {
		name = DefaultOtelServiceName
	}
	attrs := []resource.Option{resource.WithAttributes(semconv.ServiceName(name))}
	if o.ServiceNamespace != "" {
		attrs = append(attrs, resource.WithAttributes(semconv.ServiceNamespace(o.ServiceNamespace)))
	}
	endpoint := o.CollectorEndpoint
	// The sampler takes a rate per million; 1.0 (upstream's default) samples every trace.
	perMillion := int32(o.SampleRate * 1e6)
	return tracing.NewProvider(ctx, &tracingapi.TracingConfiguration{Endpoint: &endpoint, SamplingRatePerMillion: &perMillion}, grpcOpts, attrs)
}
