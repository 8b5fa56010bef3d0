package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	basecompatibility "k8s.io/component-base/compatibility"
	baseversion "k8s.io/component-base/version"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

// defaultAPIServerFlags are the flags every local apiserver gets:
//   - no endpoint reconciler: there is one apiserver and it does not need a kubernetes Service;
//   - no ServiceAccount admission: pods need no token secret;
//   - no TaintNodesByCondition: new simulated nodes are not tainted not-ready before the simulator
//     reports them Ready;
//   - no PDB watch cache: each eviction would otherwise wait on it (~100 ms).
var defaultAPIServerFlags = []string{
	"--endpoint-reconciler-type=none",
	"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
	"--watch-cache-sizes=poddisruptionbudgets.policy#0",
}

// apiServer is a kube-apiserver running in this process.
type apiServer struct {
	// admin reaches the apiserver as a member of system:masters, with the token of creds.
	admin  *rest.Config
	cancel context.CancelFunc
	// done is closed when the apiserver has stopped; err then holds why it stopped, if not asked to.
	done chan struct{}
	err  error
}

// startAPIServer builds and runs a kube-apiserver in this process, through the exported API of
// k8s.io/kubernetes/cmd/kube-apiserver/app, against the etcd at etcdURL. creds holds its serving
// certificate, service-account key and admin token. onBuild, if set, runs first in the goroutine that
// builds (and so starts) the apiserver.
func startAPIServer(ctx context.Context, addr, etcdURL string, creds *credentials, extraFlags []string, onBuild func()) (*apiServer, error) {
	logger := klog.FromContext(ctx).WithName("kube-apiserver")
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening for the kube-apiserver: %w", err)
	}
	port := listener.Addr().(*net.TCPAddr).Port

	s, err := apiServerOptions(etcdURL, creds, extraFlags)
	if err != nil {
		_ = listener.Close()
		return nil, err
	}
	s.SecureServing.Listener, s.SecureServing.BindPort = listener, port
	s.SecureServing.ExternalAddress = net.IPv4(127, 0, 0, 1)

	runCtx, cancel := context.WithCancel(klog.NewContext(context.WithoutCancel(ctx), logger))
	a := &apiServer{admin: creds.adminConfig("https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))), cancel: cancel, done: make(chan struct{})}
	// Build it from a goroutine of its own (see Options.OnAPIServerBuild); that goroutine also runs it.
	built := make(chan error, 1)
	go func() {
		if onBuild != nil {
			onBuild()
		}
		defer close(a.done)
		prepared, err := buildAPIServer(runCtx, s)
		built <- err
		if err != nil {
			_ = listener.Close()
			return
		}
		a.err = prepared.Run(runCtx)
	}()
	if err := <-built; err != nil {
		cancel()
		<-a.done
		return nil, fmt.Errorf("building kube-apiserver: %w", err)
	}
	if err := a.waitReady(ctx); err != nil {
		a.stop()
		return nil, err
	}
	logger.V(2).Info("kube-apiserver is ready", "host", a.admin.Host)
	return a, nil
}

// apiServerOptions fills kube-apiserver's options as its command line would, with the defaults above,
// then extraFlags, on top. Each apiserver gets a ComponentGlobalsRegistry of its own, as the feature
// gates and effective version of kube-apiserver, so that starting one does not touch process-wide
// registries.
func apiServerOptions(etcdURL string, creds *credentials, extraFlags []string) (*options.ServerRunOptions, error) {
	s := options.NewServerRunOptions()
	featureGate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	binary := version.MustParse(baseversion.DefaultKubeBinaryVersion)
	floor := binary.WithPatch(0).SubtractMinor(3)
	effective := basecompatibility.NewEffectiveVersion(binary, false, floor, floor)
	effective.SetEmulationVersion(featureGate.EmulationVersion())
	effective.SetMinCompatibilityVersion(featureGate.MinCompatibilityVersion())
	registry := basecompatibility.NewComponentGlobalsRegistry()
	if err := registry.Register(basecompatibility.DefaultKubeComponent, effective, featureGate); err != nil {
		return nil, err
	}
	s.GenericServerRunOptions.ComponentGlobalsRegistry = registry

	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, f := range s.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	s.SecureServing.ServerCert.CertKey.CertFile = creds.servingCertFile
	s.SecureServing.ServerCert.CertKey.KeyFile = creds.servingKeyFile
	s.Authentication.TokenFile.TokenFile = creds.tokenFile
	s.ServiceAccountSigningKeyFile = creds.serviceAccountKeyFile
	s.Authentication.ServiceAccounts.Issuers = []string{"https://kubernetes.default.svc.cluster.local"}
	s.Authentication.ServiceAccounts.KeyFiles = []string{creds.serviceAccountKeyFile}
	s.ServiceClusterIPRanges = "10.0.0.0/16"
	storage := storagebackend.NewDefaultConfig("/registry", nil)
	storage.Transport.ServerList = []string{etcdURL}
	s.Etcd.StorageConfig = *storage

	flags := append(append([]string{}, defaultAPIServerFlags...), extraFlags...)
	if err := fs.Parse(flags); err != nil {
		return nil, fmt.Errorf("kube-apiserver flags %q: %w", flags, err)
	}
	if err := registry.Set(); err != nil {
		return nil, fmt.Errorf("kube-apiserver flags %q: %w", flags, err)
	}
	// Most of Kubernetes reads the process-wide feature gate, which this apiserver's copy does not
	// change: a --feature-gates flag that differs from it would be accepted and not take effect.
	for f := range utilfeature.DefaultMutableFeatureGate.GetAll() {
		if featureGate.Enabled(f) != utilfeature.DefaultFeatureGate.Enabled(f) {
			return nil, fmt.Errorf("kube-apiserver flags: --feature-gates %s=%t differs from the process's feature gates, which a local cluster does not change", f, featureGate.Enabled(f))
		}
	}
	return s, nil
}

// buildAPIServer completes and validates the options and builds the server chain (apiextensions,
// kube-apiserver, aggregator), as kube-apiserver's Run does before it serves.
func buildAPIServer(ctx context.Context, s *options.ServerRunOptions) (interface{ Run(context.Context) error }, error) {
	completedOptions, err := s.Complete(ctx)
	if err != nil {
		return nil, fmt.Errorf("completing options: %w", err)
	}
	if errs := completedOptions.Validate(); len(errs) != 0 {
		return nil, fmt.Errorf("validating options: %w", utilerrors.NewAggregate(errs))
	}
	config, err := app.NewConfig(completedOptions)
	if err != nil {
		return nil, err
	}
	completed, err := config.Complete()
	if err != nil {
		return nil, err
	}
	server, err := app.CreateServerChain(completed)
	if err != nil {
		return nil, fmt.Errorf("creating the server chain: %w", err)
	}
	prepared, err := server.PrepareRun()
	if err != nil {
		return nil, err
	}
	return prepared, nil
}

// waitReady waits up to a minute for /healthz to answer ok and the default namespace to exist.
func (a *apiServer) waitReady(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	client, err := kubernetes.NewForConfig(a.admin)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	logger.V(2).Info("Waiting for the kube-apiserver's /healthz and default namespace", "host", a.admin.Host, "timeout", time.Minute)
	for {
		status := 0
		err := client.CoreV1().RESTClient().Get().AbsPath("/healthz").Do(ctx).StatusCode(&status).Error()
		if status == http.StatusOK {
			_, err = client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
			if err == nil {
				return nil
			}
			if !apierrors.IsNotFound(err) {
				logger.V(4).Info("Default namespace not readable yet", "err", err)
			}
		}
		select {
		case <-a.done:
			return fmt.Errorf("kube-apiserver stopped before it was ready: %w", errors.Join(a.err, err))
		case <-ctx.Done():
			return fmt.Errorf("waiting for kube-apiserver: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver was not ready within a minute (last error: %v)", err)
		}
	}
}

// stop stops the apiserver and waits until it has shut down.
func (a *apiServer) stop() {
	a.cancel()
	<-a.done
	if a.err != nil {
		klog.Background().Error(a.err, "kube-apiserver did not shut down cleanly")
	}
}
