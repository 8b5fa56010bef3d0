package component

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/path"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// Without credentials only the always-allowed paths pass (to the authoriser); anything else is 401.
// Authenticated callers always pass on, to be authorised.
func TestCredentialsRequired(t *testing.T) {
	public, err := path.NewAuthorizer([]string{"/healthz", "/readyz", "/livez", "/open/*"})
	if err != nil {
		t.Fatal(err)
	}
	h := withCredentialsRequired(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}), public)
	anonymous := &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
	someone := &user.DefaultInfo{Name: "system:serviceaccount:ns:sa", Groups: []string{user.AllAuthenticated}}
	for _, tc := range []struct {
		path string
		who  user.Info
		want int
	}{
		{"/healthz", anonymous, 200},
		{"/readyz", anonymous, 200},
		{"/livez", anonymous, 200},
		{"/open/x", anonymous, 200},
		{"/metrics", anonymous, 401},
		{"/debug/pprof/heap", anonymous, 401},
		{"/healthz/extra", anonymous, 401},
		{"/metrics", someone, 200},
		{"/debug/pprof/heap", someone, 200},
	} {
		req := httptest.NewRequest("GET", tc.path, nil)
		// The chain sets the RequestInfo before authentication.
		req = req.WithContext(apirequest.WithRequestInfo(apirequest.WithUser(req.Context(), tc.who), &apirequest.RequestInfo{Path: tc.path, Verb: "get"}))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("GET %s as %s = %d, want %d", tc.path, tc.who.GetName(), rec.Code, tc.want)
		}
	}
}
