package component

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
	cliflag "k8s.io/component-base/cli/flag"
)

// The command applies and validates its flags before Run, refuses arguments, and hands Run a live
// context; the shared flag sets are there with their upstream names.
func TestNewCommand(t *testing.T) {
	newCmd := func(ran *string) (run func(args ...string) error) {
		base := NewBase(nil)
		var fss cliflag.NamedFlagSets
		var name string
		fss.FlagSet("mine").StringVar(&name, "name", "", "a name")
		serving := NewServingOptions("accord-test", 0, Lease{})
		serving.AddFlags(&fss)
		base.AddFlags(&fss)
		cmd := NewCommand(Command{
			Use: "accord-test", Base: base, Flags: fss,
			Validate: func() error {
				if name == "" {
					return errors.New("--name: required")
				}
				return nil
			},
			Run: func(ctx context.Context) error {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				*ran = name
				return nil
			},
		})
		for _, f := range []string{"name", "v", "logging-format", "feature-gates", "version", "leader-elect", "leader-elect-lease-duration", "secure-port", "authentication-kubeconfig", "authorization-always-allow-paths"} {
			if cmd.Flags().Lookup(f) == nil {
				t.Errorf("no --%s", f)
			}
		}
		return func(args ...string) error {
			cmd.SetArgs(args)
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			return cmd.Execute()
		}
	}
	// Logging can be applied once per process, so one command runs (Validate refusing an empty
	// --name is the components' own tests' business); an argument is refused before anything runs.
	var ran string
	run := newCmd(&ran)
	if err := run("extra"); err == nil || ran != "" {
		t.Fatalf("with an argument: %v (Run saw %q), want an error and no run", err, ran)
	}
	if err := run("--name=a"); err != nil || ran != "a" {
		t.Fatalf("with --name=a: %v, Run saw %q", err, ran)
	}
}

func TestNewServingOptions(t *testing.T) {
	o := NewServingOptions("accord-test", 10999, Lease{Elect: true, Duration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second})
	le := o.LeaderElection
	if !le.LeaderElect || le.LeaseDuration.Duration != 15*time.Second || le.RenewDeadline.Duration != 10*time.Second || le.RetryPeriod.Duration != 2*time.Second ||
		le.ResourceLock != resourcelock.LeasesResourceLock || le.ResourceName != "accord-test" || le.ResourceNamespace != "kube-system" {
		t.Errorf("leader election = %+v", le)
	}
	if o.SecureServing.BindPort != 10999 || o.SecureServing.ServerCert.PairName != "accord-test" || o.SecureServing.ServerCert.CertDirectory != "" {
		t.Errorf("secure serving: port %d, pair %q, directory %q", o.SecureServing.BindPort, o.SecureServing.ServerCert.PairName, o.SecureServing.ServerCert.CertDirectory)
	}
	if errs := o.Validate(); len(errs) != 0 {
		t.Errorf("the defaults do not validate: %v", errs)
	}
}

// Without a port and a Lease, Run runs the work at once, with a context that ends when the caller's
// does, and returns its error.
func TestServingOptionsRunWithoutPortOrLease(t *testing.T) {
	o := NewServingOptions("accord-test", 0, Lease{})
	ctx, cancel := context.WithCancel(context.Background())
	want := errors.New("done")
	err := o.Run(ctx, nil, Serving{Name: "accord-test"}, func(ctx context.Context) error {
		cancel()
		select {
		case <-ctx.Done():
			return want
		case <-time.After(10 * time.Second):
			return errors.New("the work's context did not end with the caller's")
		}
	})
	if !errors.Is(err, want) {
		t.Fatalf("Run = %v, want the work's error", err)
	}
}
