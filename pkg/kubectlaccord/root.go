// Package kubectlaccord is the kubectl plugin kubectl-accord (`kubectl accord`): an operator's view of
// what Accord's scheduler and descheduler decide about nodes, computed by the same shared code the two
// binaries judge with (pkg/constraints), never by rules of its own.
package kubectlaccord

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
)

// Exit codes of kubectl-accord.
const (
	// ExitOK: the command did what was asked.
	ExitOK = 0
	// ExitError: the command failed (the API server could not be reached, an object is invalid, ...).
	ExitError = 1
	// ExitUsage: the command line is wrong (unknown flag, missing argument, bad -o).
	ExitUsage = 2
	// ExitForbidden: the API server refused a request; the message names the RBAC verb and resource.
	ExitForbidden = 3
)

// Clients are the API clients a command uses; tests pass fakes.
type Clients struct {
	Kube   kubernetes.Interface
	Accord accordclient.Interface
}

// Options are what every subcommand shares.
type Options struct {
	Streams genericiooptions.IOStreams
	Flags   *genericclioptions.ConfigFlags
	// NewClients builds the clients; nil builds them from Flags.
	NewClients func() (*Clients, error)
	// now is the clock metrics are aged against; nil is time.Now.
	now func() time.Time
}

func (o *Options) clock() time.Time {
	if o.now != nil {
		return o.now()
	}
	return time.Now()
}

func (o *Options) clients() (*Clients, error) {
	if o.NewClients != nil {
		return o.NewClients()
	}
	cfg, err := o.Flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	k, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	a, err := accordclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Clients{Kube: k, Accord: a}, nil
}

// usageError is a wrong command line (ExitUsage).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// forbiddenError is an API request RBAC refused (ExitForbidden); it names what is missing.
type forbiddenError struct {
	verb, group, resource, namespace string
	err                              error
}

func (e *forbiddenError) Error() string {
	res := e.resource
	if e.group != "" {
		res += "." + e.group
	}
	where := "cluster-wide"
	if e.namespace != "" {
		where = "in namespace " + e.namespace
	}
	return fmt.Sprintf("forbidden: this needs RBAC verb %q on %s %s (%v)", e.verb, res, where, e.err)
}

func (e *forbiddenError) Unwrap() error { return e.err }

// request wraps err from an API call of verb on group/resource: a 403 becomes a forbiddenError naming
// them, anything else keeps its message with the request added.
func request(err error, verb, group, resource, namespace string) error {
	if err == nil {
		return nil
	}
	if apierrors.IsForbidden(err) {
		return &forbiddenError{verb: verb, group: group, resource: resource, namespace: namespace, err: err}
	}
	res := resource
	if group != "" {
		res += "." + group
	}
	return fmt.Errorf("%s %s: %w", verb, res, err)
}

// ExitCode is the process exit code for the error a command returned.
func ExitCode(err error) int {
	var fe *forbiddenError
	var ue usageError
	var me *migrationFailedError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &me):
		return ExitMigrationFailed
	case errors.As(err, &fe):
		return ExitForbidden
	case errors.As(err, &ue):
		return ExitUsage
	}
	return ExitError
}

// NewCommand returns `kubectl accord` with its subcommands.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{Streams: streams, Flags: genericclioptions.NewConfigFlags(true)}
	return newCommand(o)
}

func newCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:           "kubectl-accord",
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl accord"},
		Short:         "What Accord's scheduler and descheduler decide, and why",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetOut(o.Streams.Out)
	cmd.SetErr(o.Streams.ErrOut)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	o.Flags.AddFlags(cmd.PersistentFlags())
	cmd.AddCommand(newNodesCommand(o), newWhyCommand(o), newMigrateCommand(o), newWhatIfCommand(o))
	return cmd
}

// Main runs the command line args and returns the exit code, printing the error.
func Main(streams genericiooptions.IOStreams, args []string) int {
	return MainWithFlags(streams, genericclioptions.NewConfigFlags(true), args)
}

// MainWithFlags is Main with the caller's ConfigFlags (their WrapConfigFn sees every client
// configuration the command builds: a test records the requests it sends).
func MainWithFlags(streams genericiooptions.IOStreams, flags *genericclioptions.ConfigFlags, args []string) int {
	return run(newCommand(&Options{Streams: streams, Flags: flags}), streams, args)
}

func run(cmd *cobra.Command, streams genericiooptions.IOStreams, args []string) int {
	cmd.SetArgs(args)
	err := cmd.Execute()
	if err != nil {
		if errors.As(err, new(usageError)) || strings.HasPrefix(err.Error(), "unknown command") {
			fmt.Fprintf(streams.ErrOut, "error: %v\nSee '%s --help'.\n", err, cmd.CommandPath())
			return ExitUsage
		}
		fmt.Fprintf(streams.ErrOut, "error: %v\n", err)
	}
	return ExitCode(err)
}

// exactArgs is cobra.ExactArgs whose error is a usage error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}
