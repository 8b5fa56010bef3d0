// Package metricsapi serves the resource metrics API (metrics.k8s.io/v1beta1) from inside a test
// with usage the test sets, registered with the harness's real kube-apiserver as an aggregated API.
// The server is pkg/demo/metricsapisim's (the playground serves its simulated usage with it); see there
// how the registration works.
package metricsapi

import (
	"context"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/accord-sched/accord/pkg/demo/metricsapisim"
)

// The registration's names.
const (
	Group            = metricsapisim.Group
	Version          = metricsapisim.Version
	APIServiceName   = metricsapisim.APIServiceName
	ServiceName      = metricsapisim.DefaultServiceName
	ServiceNamespace = metricsapisim.DefaultServiceNamespace
)

// Server is an in-test metrics.k8s.io backend serving the usage set per node and per pod container
// (SetNode, SetPod, ...); Register, SetDown, Requests and Close are the simulated server's.
type Server struct {
	*metricsapisim.Server
	*metricsapisim.Static
}

// Start starts the server on a loopback port; Close stops it.
func Start() (*Server, error) {
	st := metricsapisim.NewStatic()
	s, err := metricsapisim.Start(metricsapisim.Options{Provider: st})
	if err != nil {
		return nil, err
	}
	return &Server{Server: s, Static: st}, nil
}

// StartRegistered starts a server and registers it with the apiserver cfg reaches, as an aggregated
// API, until the test ends (it is unregistered and closed then).
func StartRegistered(t testing.TB, cfg *rest.Config) *Server {
	t.Helper()
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	unregister, err := s.Register(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unregister(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return s
}
