package app

import (
	"k8s.io/apimachinery/pkg/runtime"

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
