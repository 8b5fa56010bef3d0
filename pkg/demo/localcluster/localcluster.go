// Package localcluster runs a real Kubernetes control plane inside the current process: an embedded
// etcd, a kube-apiserver (started through kube-apiserver's own exported API, with credentials
// generated for each cluster), the Deployment, ReplicaSet and Namespace controllers and a node
// simulator, with Accord's CRDs installed. The playground (make run) runs it; test/harness wraps it
// for integration tests.
package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
)

// Options tune a control plane.
type Options struct {
	// APIServerFlags are kube-apiserver command-line flags added to the defaults (see
	// defaultAPIServerFlags).
	APIServerFlags []string
	// WithoutControllers leaves out the Deployment, ReplicaSet and Namespace controllers.
	WithoutControllers bool
	// WithoutNodeSimulator leaves out the node simulator.
	WithoutNodeSimulator bool
	// WithoutCRDs leaves Accord's CRDs out: a cluster where only the standard Kubernetes API is
	// served, as an operator migrating from kubernetes-sigs/descheduler has.
	WithoutCRDs bool
	// OnAPIServerBuild, if set, runs in the goroutine that builds the kube-apiserver, before it builds
	// it; that goroutine and the ones it starts run the apiserver. test/harness's goroutine-leak check
	// uses it to tell upstream's goroutines from the cluster's own.
	OnAPIServerBuild func()
}

// Cluster is a running control plane.
type Cluster struct {
	// Config reaches the apiserver as a cluster admin (AdminUser, in system:masters). Its content type
	// is the client-go default (protobuf for built-in types); use CRConfig for Accord's CRs.
	Config *rest.Config
	// Client is a clientset for built-in types.
	Client kubernetes.Interface
	// Accord is a clientset for Accord's CRDs, speaking JSON.
	Accord accordclient.Interface
	// Nodes is the node simulator; nil with WithoutNodeSimulator.
	Nodes *NodeSimulator

	dir       string
	etcd      *embed.Etcd
	apiserver *apiServer
	// What a restart of the apiserver (StartAPIServer) needs.
	ctx     context.Context
	etcdURL string
	creds   *credentials
	opts    Options
	cancel  context.CancelFunc
	stops   []func()
}

// Start brings up a control plane. Call Stop to tear it down; a failed Start cleans up after itself.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	dir, err := os.MkdirTemp("", "accord-controlplane-")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &Cluster{dir: dir, cancel: cancel}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()

	var etcdURL string
	c.etcd, etcdURL, err = startEtcd(filepath.Join(dir, "etcd"))
	if err != nil {
		return nil, err
	}
	creds, err := newCredentials(filepath.Join(dir, "pki"))
	if err != nil {
		return nil, fmt.Errorf("generating apiserver credentials: %w", err)
	}
	c.ctx, c.etcdURL, c.creds, c.opts = ctx, etcdURL, creds, opts
	c.apiserver, err = startAPIServer(ctx, "127.0.0.1:0", etcdURL, creds, opts.APIServerFlags, opts.OnAPIServerBuild)
	if err != nil {
		return nil, err
	}
	c.Config = rest.CopyConfig(c.apiserver.admin)
	c.Config.QPS, c.Config.Burst = 1000, 2000
	if c.Client, err = kubernetes.NewForConfig(c.Config); err != nil {
		return nil, err
	}
	if c.Accord, err = accordclient.NewForConfig(c.CRConfig()); err != nil {
		return nil, err
	}
	if !opts.WithoutCRDs {
		if err := InstallCRDs(ctx, c.Config); err != nil {
			return nil, fmt.Errorf("installing CRDs: %w", err)
		}
	}
	if !opts.WithoutControllers {
		stop, err := startWorkloadControllers(ctx, c.Config)
		if err != nil {
			return nil, err
		}
		c.stops = append(c.stops, stop)
	}
	if !opts.WithoutNodeSimulator {
		c.Nodes = newNodeSimulator(c.Client)
		if err := c.Nodes.start(ctx, 4); err != nil {
			return nil, err
		}
		c.stops = append(c.stops, c.Nodes.stop)
	}
	return c, nil
}

// StopAPIServer stops the kube-apiserver, leaving etcd, the controllers and the node simulator
// running (their requests fail until StartAPIServer): an apiserver outage, as a restart of it in a
// real cluster is. Neither it nor StartAPIServer may run concurrently with Stop.
func (c *Cluster) StopAPIServer() error {
	if c.apiserver == nil {
		return errors.New("the kube-apiserver is not running")
	}
	c.apiserver.stop()
	c.apiserver = nil
	return nil
}

// StartAPIServer starts a new kube-apiserver after StopAPIServer, on the same address, etcd and
// credentials, so every client of the cluster (Config, kubeconfigs written before) reaches it
// again. It returns once the apiserver is ready.
func (c *Cluster) StartAPIServer() error {
	if c.apiserver != nil {
		return errors.New("the kube-apiserver is running")
	}
	if c.Config == nil || c.ctx == nil {
		return errors.New("control plane is not running")
	}
	u, err := url.Parse(c.Config.Host)
	if err != nil {
		return err
	}
	a, err := startAPIServer(c.ctx, u.Host, c.etcdURL, c.creds, c.opts.APIServerFlags, c.opts.OnAPIServerBuild)
	if err != nil {
		return fmt.Errorf("restarting the kube-apiserver on %s: %w", u.Host, err)
	}
	c.apiserver = a
	return nil
}

// CRConfig returns a copy of Config that speaks JSON, which custom resources require.
func (c *Cluster) CRConfig() *rest.Config {
	cfg := rest.CopyConfig(c.Config)
	cfg.ContentType = "application/json"
	cfg.AcceptContentTypes = "application/json"
	return cfg
}

// Stop tears the control plane down: controllers and simulator first, then the apiserver, then etcd,
// then the data directory (with the generated credentials). It is safe to call more than once.
func (c *Cluster) Stop() {
	if c.cancel != nil {
		c.cancel()
		c.cancel = nil
	}
	for i := len(c.stops) - 1; i >= 0; i-- {
		c.stops[i]()
	}
	c.stops = nil
	if c.apiserver != nil {
		c.apiserver.stop()
		c.apiserver = nil
	}
	if c.etcd != nil {
		c.etcd.Close()
		<-c.etcd.Server.StopNotify()
		c.etcd = nil
	}
	if c.dir != "" {
		_ = os.RemoveAll(c.dir)
		c.dir = ""
	}
}

// WriteKubeconfig writes a kubeconfig for the cluster admin to path, for kubectl and for binaries
// started with --kubeconfig.
func (c *Cluster) WriteKubeconfig(path string) error {
	if c.Config == nil {
		return errors.New("control plane is not running")
	}
	cfg := c.Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters["accord"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.TLSClientConfig.CAData,
		TLSServerName:            cfg.TLSClientConfig.ServerName,
		InsecureSkipTLSVerify:    cfg.TLSClientConfig.Insecure,
	}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{
		Token:                 cfg.BearerToken,
		ClientCertificateData: cfg.TLSClientConfig.CertData,
		ClientKeyData:         cfg.TLSClientConfig.KeyData,
	}
	kc.Contexts["accord"] = &clientcmdapi.Context{Cluster: "accord", AuthInfo: "admin"}
	kc.CurrentContext = "accord"
	return clientcmd.WriteToFile(*kc, path)
}
