package server

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/accord-sched/accord/pkg/scheduler/crcache"
	"github.com/accord-sched/accord/pkg/scheduler/plugins"
)

// TestPluginOptionsRegisterEveryDescriptor: accord-scheduler registers exactly the plugins of
// plugins.Descriptors.
func TestPluginOptionsRegisterEveryDescriptor(t *testing.T) {
	registry := frameworkruntime.Registry{}
	for _, opt := range PluginOptions(crcache.New()) {
		if err := opt(registry); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for name := range registry {
		names = append(names, name)
	}
	slices.Sort(names)
	var want []string
	for _, d := range plugins.Descriptors() {
		want = append(want, d.Name)
	}
	slices.Sort(want)
	if !slices.Equal(names, want) || !slices.Contains(names, "LoadAware") || !slices.Contains(names, "NodeCRDResourceFit") {
		t.Fatalf("registered %v, want %v", names, want)
	}
}

// TestWithKubeconfig: the rewritten sample configuration points at the given kubeconfig, keeps
// everything else, and still loads through kube-scheduler's loader.
func TestWithKubeconfig(t *testing.T) {
	dir := t.TempDir()
	sample := filepath.Join("..", "..", "..", "manifests", "scheduler", "config.yaml")
	path, err := withKubeconfig(sample, "relative/kubeconfig", dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := options.LoadConfigFromFile(klog.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.Abs("relative/kubeconfig")
	if cfg.ClientConnection.Kubeconfig != want {
		t.Errorf("kubeconfig = %q, want %q", cfg.ClientConnection.Kubeconfig, want)
	}
	if cfg.ClientConnection.QPS != 200 || len(cfg.Profiles) != 1 || cfg.Profiles[0].SchedulerName != SchedulerName {
		t.Errorf("the rest of the configuration changed: %+v", cfg.ClientConnection)
	}

	// A file without clientConnection gets one.
	bare := filepath.Join(dir, "bare.yaml")
	if err := os.WriteFile(bare, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path, err = withKubeconfig(bare, "/k", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := options.LoadConfigFromFile(klog.Background(), path); err != nil || cfg.ClientConnection.Kubeconfig != "/k" {
		t.Fatalf("bare config: %v, %+v", err, cfg)
	}
}

// TestCommandFlagsMatchKubeScheduler: accord-scheduler's command, which this package builds itself,
// takes exactly kube-scheduler's flags, with the same types, defaults and usage (the command's own
// name aside, which --help's usage gives), plus its own AccordFlags.
func TestCommandFlagsMatchKubeScheduler(t *testing.T) {
	type flag struct{ typ, def, usage string }
	collect := func(cmd *cobra.Command) map[string]flag {
		m := map[string]flag{}
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			m[f.Name] = flag{f.Value.Type(), f.DefValue, strings.ReplaceAll(f.Usage, cmd.Name(), "<command>")}
		})
		return m
	}
	got, want := collect(NewSchedulerCommand()), collect(app.NewSchedulerCommand())
	if len(want) < 50 {
		t.Fatalf("kube-scheduler has only %d flags; the comparison would prove little", len(want))
	}
	for name, w := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("--%s: kube-scheduler has it, accord-scheduler does not", name)
		} else if g != w {
			t.Errorf("--%s: accord-scheduler %+v, kube-scheduler %+v", name, g, w)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok && !slices.Contains(AccordFlags, name) {
			t.Errorf("--%s: accord-scheduler has it, kube-scheduler does not, and it is not one of AccordFlags", name)
		}
	}
	for _, name := range AccordFlags {
		if _, ok := got[name]; !ok {
			t.Errorf("--%s: in AccordFlags, not a flag of accord-scheduler", name)
		}
	}
}

// TestCommandTakesNoArguments: like kube-scheduler, accord-scheduler rejects positional arguments
// before it starts anything.
func TestCommandTakesNoArguments(t *testing.T) {
	cmd := NewSchedulerCommand()
	cmd.SetArgs([]string{"extra"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), `takes no arguments, got ["extra"]`) {
		t.Fatalf("err = %v", err)
	}
}
