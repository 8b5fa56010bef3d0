package component

import (
	"fmt"
	"net/http"

	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/path"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/server"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	apiserveroptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/kubernetes/scheme"
)

// Auth is a secure port's delegated authentication and authorisation, as kube-scheduler's and
// kube-controller-manager's: a bearer token is checked with a TokenReview and a client certificate
// against the cluster's client CA (both read with --authentication-kubeconfig, or the in-cluster
// configuration), and every request with a SubjectAccessReview (--authorization-kubeconfig), except
// the --authorization-always-allow-paths (/healthz, /readyz, /livez) and the
// --authorization-always-allow-groups (system:masters). /metrics needs get on the non-resource URL
// /metrics, /debug/pprof/ get on /debug/pprof/<profile>.
//
// Out of a cluster without either kubeconfig (a --kubeconfig run on a laptop, the playground) there is
// nothing to review tokens with: every caller is system:anonymous and only the always-allowed paths
// answer (the others 401); give the kubeconfigs (e.g. the one --kubeconfig names) to authorise callers.
type Auth struct {
	Authentication *apiserveroptions.DelegatingAuthenticationOptions
	Authorization  *apiserveroptions.DelegatingAuthorizationOptions
}

// NewAuth returns kube-scheduler's defaults: the kubeconfigs are optional (out of a cluster without
// them, tokens are not reviewed), and a failed lookup of the client CA in
// kube-system/extension-apiserver-authentication is tolerated.
func NewAuth() Auth {
	a := Auth{Authentication: apiserveroptions.NewDelegatingAuthenticationOptions(), Authorization: apiserveroptions.NewDelegatingAuthorizationOptions()}
	a.Authentication.TolerateInClusterLookupFailure = true
	a.Authentication.RemoteKubeConfigFileOptional = true
	a.Authorization.RemoteKubeConfigFileOptional = true
	return a
}

// AddFlags adds kube-scheduler's authentication and authorization flags (--authentication-kubeconfig,
// --authentication-skip-lookup, --authorization-kubeconfig, --authorization-always-allow-paths, ...).
func (a Auth) AddFlags(authn, authz *pflag.FlagSet) {
	a.Authentication.AddFlags(authn)
	a.Authorization.AddFlags(authz)
}

// Validate checks the flags.
func (a Auth) Validate() []error {
	return append(a.Authentication.Validate(), a.Authorization.Validate()...)
}

// withAuth builds the authenticator and authorizer (after the serving info, whose client CA the
// authenticator sets) and wraps handler in kube-scheduler's filter chain.
func (a Auth) withAuth(handler http.Handler, info *server.SecureServingInfo) (http.Handler, error) {
	var authn server.AuthenticationInfo
	if err := a.Authentication.ApplyTo(&authn, info, nil); err != nil {
		return nil, err
	}
	var authz server.AuthorizationInfo
	if err := a.Authorization.ApplyTo(&authz); err != nil {
		return nil, err
	}
	public, err := path.NewAuthorizer(a.Authorization.AlwaysAllowPaths)
	if err != nil {
		return nil, fmt.Errorf("--authorization-always-allow-paths: %w", err)
	}
	resolver := &apirequest.RequestInfoFactory{}
	handler = genericapifilters.WithAuthorization(handler, authz.Authorizer, scheme.Codecs)
	handler = withCredentialsRequired(handler, public)
	handler = genericapifilters.WithAuthentication(handler, authn.Authenticator, genericapifilters.Unauthorized(scheme.Codecs), nil, nil)
	handler = genericapifilters.WithRequestInfo(handler, resolver)
	handler = genericapifilters.WithCacheControl(handler)
	handler = genericfilters.WithHTTPLogging(handler)
	handler = genericfilters.WithPanicRecovery(handler, resolver)
	return handler, nil
}

// withCredentialsRequired answers 401 to a request without credentials (the anonymous user
// authentication gives it, so that probes work) on every path but the always-allowed ones: a caller
// who sent nothing is told to authenticate, one who authenticated without the rights gets 403.
func withCredentialsRequired(handler http.Handler, public authorizer.Authorizer) http.Handler {
	unauthorized := genericapifilters.Unauthorized(scheme.Codecs)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, ok := apirequest.UserFrom(r.Context()); ok && u.GetName() == user.Anonymous {
			d, _, err := public.Authorize(r.Context(), authorizer.AttributesRecord{User: u, Verb: "get", Path: r.URL.Path})
			if err != nil || d != authorizer.DecisionAllow {
				unauthorized.ServeHTTP(w, r)
				return
			}
		}
		handler.ServeHTTP(w, r)
	})
}
