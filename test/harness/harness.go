// Package harness runs a real Kubernetes control plane inside the current process: an embedded etcd,
// a kube-apiserver, the Deployment and ReplicaSet controllers and a node simulator, with Accord's
// CRDs installed. Integration tests, end-to-end tests and the playground (make run) all start it.
//
// One control plane serves a whole test package: start it in TestMain with Main, and give every test
// its own namespace (Env.CreateNamespace) so tests can run repeatedly (-count=2) against it.
package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"

	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
)

// Options tune a control plane.
type Options struct {
	// APIServerFlags are added to the harness defaults (see defaultAPIServerFlags).
	APIServerFlags []string
	// WithoutControllers leaves out the Deployment and ReplicaSet controllers.
	WithoutControllers bool
	// WithoutNodeSimulator leaves out the node simulator.
	WithoutNodeSimulator bool
}

// Env is a running control plane.
type Env struct {
	// Config reaches the apiserver as a cluster admin. Its content type is the client-go default
	// (protobuf for built-in types); use CRConfig for Accord's CRs.
	Config *rest.Config
	// Client is a clientset for built-in types.
	Client kubernetes.Interface
	// Accord is a clientset for Accord's CRDs, speaking JSON.
	Accord accordclient.Interface
	// Nodes is the node simulator; nil with WithoutNodeSimulator.
	Nodes *NodeSimulator

	dir       string
	tb        *procTB
	etcd      *embed.Etcd
	apiserver *kubeapiservertesting.TestServer
	cancel    context.CancelFunc
	stops     []func()
}

// Start brings up a control plane. Call Stop to tear it down; a failed Start cleans up after itself.
func Start(ctx context.Context, opts Options) (_ *Env, err error) {
	dir, err := os.MkdirTemp("", "accord-controlplane-")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	env := &Env{dir: dir, tb: &procTB{name: "accord-harness"}, cancel: cancel}
	defer func() {
		if err != nil {
			env.Stop()
		}
	}()

	var etcdURL string
	env.etcd, etcdURL, err = startEtcd(filepath.Join(dir, "etcd"))
	if err != nil {
		return nil, err
	}
	env.apiserver, err = startAPIServer(env.tb, etcdURL, opts.APIServerFlags)
	if err != nil {
		return nil, err
	}
	env.Config = rest.CopyConfig(env.apiserver.ClientConfig)
	env.Config.QPS, env.Config.Burst = 1000, 2000
	if env.Client, err = kubernetes.NewForConfig(env.Config); err != nil {
		return nil, err
	}
	if env.Accord, err = accordclient.NewForConfig(env.CRConfig()); err != nil {
		return nil, err
	}
	if err := InstallCRDs(ctx, env.Config); err != nil {
		return nil, fmt.Errorf("installing CRDs: %w", err)
	}
	if !opts.WithoutControllers {
		stop, err := startWorkloadControllers(ctx, env.Config)
		if err != nil {
			return nil, err
		}
		env.stops = append(env.stops, stop)
	}
	if !opts.WithoutNodeSimulator {
		env.Nodes = newNodeSimulator(env.Client)
		if err := env.Nodes.start(ctx, 4); err != nil {
			return nil, err
		}
		env.stops = append(env.stops, env.Nodes.stop)
	}
	return env, nil
}

// CRConfig returns a copy of Config that speaks JSON, which custom resources require.
func (e *Env) CRConfig() *rest.Config {
	cfg := rest.CopyConfig(e.Config)
	cfg.ContentType = "application/json"
	cfg.AcceptContentTypes = "application/json"
	return cfg
}

// Stop tears the control plane down: controllers and simulator first, then the apiserver, then etcd,
// then the data directory. It is safe to call more than once.
func (e *Env) Stop() {
	if e.cancel != nil {
		e.cancel()
		e.cancel = nil
	}
	for i := len(e.stops) - 1; i >= 0; i-- {
		e.stops[i]()
	}
	e.stops = nil
	if e.apiserver != nil {
		e.apiserver.TearDownFn()
		e.apiserver = nil
	}
	if e.tb != nil {
		e.tb.runCleanups()
	}
	if e.etcd != nil {
		e.etcd.Close()
		<-e.etcd.Server.StopNotify()
		e.etcd = nil
	}
	if e.dir != "" {
		_ = os.RemoveAll(e.dir)
		e.dir = ""
	}
}

// WriteKubeconfig writes a kubeconfig for the cluster admin to path, for kubectl and for binaries
// started with --kubeconfig.
func (e *Env) WriteKubeconfig(path string) error {
	if e.Config == nil {
		return errors.New("control plane is not running")
	}
	c := e.Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters["accord"] = &clientcmdapi.Cluster{
		Server:                   c.Host,
		CertificateAuthorityData: c.TLSClientConfig.CAData,
		TLSServerName:            c.TLSClientConfig.ServerName,
		InsecureSkipTLSVerify:    c.TLSClientConfig.Insecure,
	}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{
		Token:                 c.BearerToken,
		ClientCertificateData: c.TLSClientConfig.CertData,
		ClientKeyData:         c.TLSClientConfig.KeyData,
	}
	kc.Contexts["accord"] = &clientcmdapi.Context{Cluster: "accord", AuthInfo: "admin"}
	kc.CurrentContext = "accord"
	return clientcmd.WriteToFile(*kc, path)
}

// WaitFor polls cond every 20 ms until it returns true, an error, or timeout passes.
func WaitFor(ctx context.Context, timeout time.Duration, cond func(ctx context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ok, err := cond(ctx)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("condition not met within %s", timeout)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
