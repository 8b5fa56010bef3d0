package app

import (
	"k8s.io/apimachinery/pkg/runtime"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
)

// Option adds plugins to the command's registries (runner.Option).
type Option = runner.Option

// WithPlugin registers an out-of-tree plugin, and its args type when given, with the command built
// by NewDeschedulerCommand (see runner.WithPlugin).
func WithPlugin(name string, factory framework.PluginFactory, argsType ...runtime.Object) Option {
	return runner.WithPlugin(name, factory, argsType...)
}

// WithSchedulerPlugin registers an out-of-tree scheduler plugin with the command's
// SchedulerSimulation (see runner.WithSchedulerPlugin): give it the name and factory the scheduler
// binary gets through kube-scheduler's app.WithPlugin, and the simulation builds every profile of
// --scheduler-config-file that enables the plugin, judging with the plugin the scheduler runs.
func WithSchedulerPlugin(name string, factory frameworkruntime.PluginFactory) Option {
	return runner.WithSchedulerPlugin(name, factory)
}
