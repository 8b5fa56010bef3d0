// Package server assembles accord-scheduler: kube-scheduler from k8s.io/kubernetes with Accord's
// plugins registered and their args known to the configuration scheme. cmd/scheduler runs
// NewSchedulerCommand; the playground and the integration tests run the same scheduler in-process
// with RunInProcess.
package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/component-base/configz"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"sigs.k8s.io/yaml"

	// Registers the plugins' args with kube-scheduler's configuration scheme.
	_ "github.com/accord-sched/accord/apis/config/scheme"
	"github.com/accord-sched/accord/pkg/scheduler/crcache"
	"github.com/accord-sched/accord/pkg/scheduler/plugins"
)

// SchedulerName is the profile name Accord's manifests and samples use; pods opt in with
// spec.schedulerName: accord-scheduler.
const SchedulerName = "accord-scheduler"

// PluginOptions registers every Accord plugin (plugins.Descriptors) with a scheduler. All of them
// read CRs from cache, which must belong to this one scheduler.
func PluginOptions(cache *crcache.Cache) []app.Option {
	var opts []app.Option
	for _, d := range plugins.Descriptors() {
		opts = append(opts, app.WithPlugin(d.Name, d.Factory(cache)))
	}
	return opts
}

// RunInProcess runs accord-scheduler inside the calling process until ctx is done, and returns
// nil then (or the error that stopped it earlier). configFile is a KubeSchedulerConfiguration, for
// example manifests/scheduler/config.yaml; a non-empty kubeconfigPath replaces its
// clientConnection.kubeconfig. No HTTPS endpoint is served, and the config file should have leader
// election off (the sample does). Only one scheduler can run in a process at a time.
func RunInProcess(ctx context.Context, kubeconfigPath, configFile string) error {
	return RunInProcessWith(ctx, kubeconfigPath, configFile, NewAccordOptions())
}

// RunInProcessWith is RunInProcess with accord-scheduler's own flags set to a.
func RunInProcessWith(ctx context.Context, kubeconfigPath, configFile string, a *AccordOptions) error {
	if kubeconfigPath != "" {
		dir, err := os.MkdirTemp("", "accord-scheduler-")
		if err != nil {
			return err
		}
		defer func() { _ = os.RemoveAll(dir) }()
		configFile, err = withKubeconfig(configFile, kubeconfigPath, dir)
		if err != nil {
			return err
		}
	}
	opts := options.NewOptions()
	opts.ConfigFile = configFile
	// No serving: in-process schedulers (several may run in one test binary) need no port.
	opts.SecureServing.BindPort = 0
	opts.SecureServing.Listener = nil

	cache := crcache.New()
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		cache.Shutdown()
	}()
	// kube-scheduler publishes its configuration under a process-wide /configz name, which only one
	// scheduler can hold at a time. Check it is free, and free it again when this one stops, so that
	// in-process schedulers can run one after another.
	if _, err := configz.New(configzName); err != nil {
		return fmt.Errorf("another scheduler is running in this process: %w", err)
	}
	configz.Delete(configzName)
	defer configz.Delete(configzName)

	err := setupAndRun(ctx, opts, a, cache, nil)
	if ctx.Err() != nil {
		// Stopped on purpose. Without leader election kube-scheduler reports that as an error
		// ("finished without leader elect").
		return nil
	}
	return err
}

// configzName is the name kube-scheduler registers its configuration under.
const configzName = "componentconfig"

// withKubeconfig writes a copy of configFile into dir with clientConnection.kubeconfig set to
// kubeconfig (made absolute) and returns the copy's path.
func withKubeconfig(configFile, kubeconfig, dir string) (string, error) {
	data, err := os.ReadFile(configFile)
	if err != nil {
		return "", err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return "", fmt.Errorf("reading %s: %w", configFile, err)
	}
	if doc == nil {
		doc = map[string]any{}
	}
	abs, err := filepath.Abs(kubeconfig)
	if err != nil {
		return "", err
	}
	cc, _ := doc["clientConnection"].(map[string]any)
	if cc == nil {
		cc = map[string]any{}
	}
	cc["kubeconfig"] = abs
	doc["clientConnection"] = cc
	out, err := yaml.Marshal(doc)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "config.yaml")
	return path, os.WriteFile(path, out, 0o600)
}
