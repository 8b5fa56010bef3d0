package console

import (
	"strings"
	"testing"
)

// The command's flags: each new one parses and is checked; --allowed-hosts is for authentication
// none only, and the TLS files come in pairs.
func TestCommandFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--authentication=token"}, ""},
		{[]string{"--authentication=token", "--token-audience=my-console", "--session-max-age=1h", "--session-idle-timeout=5m", "--max-sessions=10",
			"--failed-logins=3", "--failed-login-interval=1m", "--max-streams=5", "--max-streams-per-session=1", "--review-qps=5", "--review-burst=10"}, ""},
		{[]string{"--authentication=token", "--token-audience="}, "--token-audience"},
		{[]string{"--authentication=token", "--failed-logins=0"}, "--failed-logins"},
		{[]string{"--authentication=token", "--allowed-hosts=console.example:8080"}, "--allowed-hosts"},
		{[]string{"--authentication=none", "--allowed-hosts=console.example:8080"}, ""},
		{[]string{"--kubeconfig=kc", "--allowed-hosts=console.example:8080"}, ""},
		{[]string{"--tls-cert-file=c.pem"}, "--tls-cert-file"},
		{[]string{"--tls-cert-file=c.pem", "--tls-private-key-file=k.pem"}, ""},
		{[]string{"--max-streams=0"}, "--max-streams"},
	} {
		o := NewCommandOptions()
		fss := o.Flags()
		fs := fss.FlagSet("all")
		for _, f := range fss.FlagSets {
			fs.AddFlagSet(f)
		}
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		err := o.Validate()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%v: %v, want an error naming %s", tc.args, err, tc.wantErr)
		}
	}
}
