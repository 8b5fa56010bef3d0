package console

import (
	"context"
	"crypto/sha256"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// TokenCookie holds the bearer token the login page was given (HttpOnly, SameSite=Strict).
const TokenCookie = "accord-console-token"

// Default explain permission: the chart's and the kustomize base's ClusterRole accord-console-explain
// grants it. It is a resource no API serves: RBAC authorises it all the same.
const (
	DefaultExplainGroup    = "console.accord.dev"
	DefaultExplainResource = "explain"
	DefaultExplainVerb     = "create"
)

// DefaultExplainAttributes is the default explain permission.
func DefaultExplainAttributes() authorizationv1.ResourceAttributes {
	return authorizationv1.ResourceAttributes{Verb: DefaultExplainVerb, Group: DefaultExplainGroup, Resource: DefaultExplainResource}
}

// accessCacheTTL is how long a TokenReview's or a SubjectAccessReview's answer is reused.
const accessCacheTTL = 10 * time.Second

// maxCached bounds each answer cache; a full cache is emptied (answers are cheap to ask again).
const maxCached = 4096

// viewReads are what the console's page shows, cluster-wide: a user allowed every one of them reads
// the shared View; the others read what their namespaces allow (viewScope).
var viewReads = []authorizationv1.ResourceAttributes{
	{Verb: "list", Resource: "pods"},
	{Verb: "list", Resource: "nodes"},
	{Verb: "list", Resource: "events"},
	{Verb: "list", Group: "scheduling.accord.dev", Resource: "clusterscopedresources"},
	{Verb: "list", Group: "slo.accord.dev", Resource: "nodemetrics"},
}

// AccessOptions configure Access.
type AccessOptions struct {
	// Explain is the permission explain needs (checked with a SubjectAccessReview).
	Explain authorizationv1.ResourceAttributes
	// ExplainInterval is how often one user may run explain (a token bucket of one); 0: no limit.
	ExplainInterval time.Duration
}

// Access authenticates the console's users with TokenReviews (a bearer token from the Authorization
// header, as a proxy sends it, or from the login page's cookie) and authorises them with
// SubjectAccessReviews, through the console's own client (which needs system:auth-delegator).
type Access struct {
	client kubernetes.Interface
	opts   AccessOptions
	now    func() time.Time

	mu       sync.Mutex
	tokens   map[[32]byte]tokenAnswer
	reviews  map[string]reviewAnswer
	limiters map[string]*rate.Limiter
}

type tokenAnswer struct {
	user    *authenticationv1.UserInfo // nil: not authenticated
	expires time.Time
}

type reviewAnswer struct {
	allowed bool
	expires time.Time
}

// NewAccess returns an Access that reviews with client.
func NewAccess(client kubernetes.Interface, opts AccessOptions) *Access {
	return &Access{client: client, opts: opts, now: time.Now, tokens: map[[32]byte]tokenAnswer{},
		reviews: map[string]reviewAnswer{}, limiters: map[string]*rate.Limiter{}}
}

// requestToken is the request's bearer token: the Authorization header's, else the cookie's.
func requestToken(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		if t, ok := strings.CutPrefix(h, "Bearer "); ok {
			return strings.TrimSpace(t)
		}
		return ""
	}
	if c, err := r.Cookie(TokenCookie); err == nil {
		return c.Value
	}
	return ""
}

// authenticate reviews token; nil user: not authenticated.
func (a *Access) authenticate(ctx context.Context, token string) (*authenticationv1.UserInfo, error) {
	key := sha256.Sum256([]byte(token))
	a.mu.Lock()
	if ans, ok := a.tokens[key]; ok && a.now().Before(ans.expires) {
		a.mu.Unlock()
		return ans.user, nil
	}
	a.mu.Unlock()
	tr, err := a.client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("TokenReview: %w", err)
	}
	var user *authenticationv1.UserInfo
	if tr.Status.Authenticated {
		user = &tr.Status.User
	}
	a.mu.Lock()
	if len(a.tokens) >= maxCached {
		clear(a.tokens)
	}
	a.tokens[key] = tokenAnswer{user: user, expires: a.now().Add(accessCacheTTL)}
	a.mu.Unlock()
	return user, nil
}

// allowed asks whether user may do attrs (cluster-wide when attrs has no namespace).
func (a *Access) allowed(ctx context.Context, user *authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes) (bool, error) {
	key := fmt.Sprintf("%s\x00%s\x00%v\x00%s/%s/%s/%s", user.Username, user.UID, user.Groups, attrs.Verb, attrs.Group, attrs.Resource, attrs.Namespace)
	a.mu.Lock()
	if ans, ok := a.reviews[key]; ok && a.now().Before(ans.expires) {
		a.mu.Unlock()
		return ans.allowed, nil
	}
	a.mu.Unlock()
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := a.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra, ResourceAttributes: &attrs,
	}}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("SubjectAccessReview: %w", err)
	}
	a.mu.Lock()
	if len(a.reviews) >= maxCached {
		clear(a.reviews)
	}
	a.reviews[key] = reviewAnswer{allowed: sar.Status.Allowed, expires: a.now().Add(accessCacheTTL)}
	a.mu.Unlock()
	return sar.Status.Allowed, nil
}

// explainAllowed takes a token from user's explain bucket; when empty it returns how long to wait.
func (a *Access) explainAllowed(user string) (bool, time.Duration) {
	if a.opts.ExplainInterval <= 0 {
		return true, 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	l, ok := a.limiters[user]
	if !ok {
		if len(a.limiters) >= maxCached {
			clear(a.limiters)
		}
		l = rate.NewLimiter(rate.Every(a.opts.ExplainInterval), 1)
		a.limiters[user] = l
	}
	r := l.ReserveN(a.now(), 1)
	if d := r.DelayFrom(a.now()); d > 0 {
		r.CancelAt(a.now())
		return false, d
	}
	return true, 0
}

type userKey struct{}

// userFrom returns the authenticated user of a request (nil without Access).
func userFrom(ctx context.Context) *authenticationv1.UserInfo {
	u, _ := ctx.Value(userKey{}).(*authenticationv1.UserInfo)
	return u
}

// public paths answer without a token: the probes and the login page.
func public(path string) bool {
	switch path {
	case "/healthz", "/readyz", "/login", "/logout", "/style.css":
		return true
	}
	return false
}

// wrap authenticates every request but the public ones and decides what of the View the user may
// read: a user who may list pods, nodes, Events, ClusterScopedResources and NodeMetrics cluster-wide
// reads the shared View; a user who may list pods in at least one namespace the console holds pods
// of (namespaces) reads a filtered one (viewScope); anyone else gets 403.
func (a *Access) wrap(logger klog.Logger, namespaces func() []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if public(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		token := requestToken(r)
		var user *authenticationv1.UserInfo
		if token != "" {
			var err error
			if user, err = a.authenticate(r.Context(), token); err != nil {
				logger.Error(err, "Reviewing a console user's token")
				http.Error(w, "authentication is unavailable: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		if user == nil {
			if r.Method == http.MethodGet && (r.URL.Path == "/" || r.URL.Path == "/index.html") {
				http.Redirect(w, r, "/login", http.StatusSeeOther)
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="accord-console"`)
			http.Error(w, "Unauthorized: log in at /login or send an Authorization: Bearer token", http.StatusUnauthorized)
			return
		}
		ctx := context.WithValue(r.Context(), userKey{}, user)
		all, err := a.allowedAll(ctx, user, viewReads)
		if err != nil {
			logger.Error(err, "Authorizing a console user", "user", user.Username)
			http.Error(w, "authorization is unavailable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		if !all {
			sc := &viewScope{access: a, user: user}
			if sc.cluster, err = a.allowedAll(ctx, user, clusterReads); err != nil {
				logger.Error(err, "Authorizing a console user", "user", user.Username)
				http.Error(w, "authorization is unavailable: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
			if !sc.anyNamespace(ctx, logger, namespaces()) {
				http.Error(w, fmt.Sprintf("Forbidden: user %q may list pods in none of the namespaces the console shows pods of", user.Username), http.StatusForbidden)
				return
			}
			ctx = context.WithValue(ctx, scopeKey{}, sc)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// allowedAll asks whether user may do every one of attrs.
func (a *Access) allowedAll(ctx context.Context, user *authenticationv1.UserInfo, attrs []authorizationv1.ResourceAttributes) (bool, error) {
	for _, at := range attrs {
		if ok, err := a.allowed(ctx, user, at); err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// anyNamespace reports whether the user may list pods in one of namespaces.
func (s *viewScope) anyNamespace(ctx context.Context, logger klog.Logger, namespaces []string) bool {
	for _, ns := range namespaces {
		if s.namespaceReads(ctx, logger, ns).pods {
			return true
		}
	}
	return false
}

// authorizeExplain checks the explain permission and the user's rate; false: it has answered.
func (a *Access) authorizeExplain(w http.ResponseWriter, r *http.Request) bool {
	user := userFrom(r.Context())
	if user == nil {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return false
	}
	ok, err := a.allowed(r.Context(), user, a.opts.Explain)
	if err != nil {
		http.Error(w, "authorization is unavailable: "+err.Error(), http.StatusServiceUnavailable)
		return false
	}
	if !ok {
		e := a.opts.Explain
		http.Error(w, fmt.Sprintf("Forbidden: explain needs %s on %s.%s (user %q)", e.Verb, e.Resource, e.Group, user.Username), http.StatusForbidden)
		return false
	}
	if ok, wait := a.explainAllowed(user.Username); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds()+0.999)))
		http.Error(w, fmt.Sprintf("explain is limited to one run per %s per user; retry in %s", a.opts.ExplainInterval, wait.Round(time.Second)), http.StatusTooManyRequests)
		return false
	}
	return true
}

var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Accord console: log in</title><link rel="stylesheet" href="style.css"></head>
<body><main><section>
<h2>Log in to the Accord console</h2>
<p class="hint">Paste a Kubernetes bearer token (e.g. <code>kubectl create token NAME</code>). The console reviews it with the apiserver and shows what it may list: the pods of the namespaces it may list pods in, and the nodes' state if it may list nodes, ClusterScopedResources and NodeMetrics.</p>
{{if .}}<p role="alert">{{.}}</p>{{end}}
<form method="post" action="/login">
<label>Token <input type="password" name="token" autocomplete="off" required></label>
<button type="submit">Log in</button>
</form>
</section></main></body></html>
`))

// sameOrigin refuses what a browser marks as sent from another site: an Origin header naming another
// host, or Sec-Fetch-Site cross-site or same-site. Clients that send neither (curl, proxies) pass.
func sameOrigin(r *http.Request) error {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		return fmt.Errorf("Sec-Fetch-Site: %s", s)
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return fmt.Errorf("Origin %q is not this console's (%s)", o, r.Host)
		}
	}
	return nil
}

// login serves the login page and takes its form: the token is reviewed and, if it authenticates,
// kept in an HttpOnly, SameSite=Strict cookie.
func (a *Access) login(logger klog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.Method != http.MethodPost {
			_ = loginPage.Execute(w, "")
			return
		}
		if err := sameOrigin(r); err != nil {
			http.Error(w, "Forbidden: cross-site request: "+err.Error(), http.StatusForbidden)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
		token := strings.TrimSpace(r.PostFormValue("token"))
		if token == "" {
			w.WriteHeader(http.StatusBadRequest)
			_ = loginPage.Execute(w, "token: required")
			return
		}
		user, err := a.authenticate(r.Context(), token)
		if err != nil {
			logger.Error(err, "Reviewing a console login")
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = loginPage.Execute(w, "The apiserver could not review the token: "+err.Error())
			return
		}
		if user == nil {
			w.WriteHeader(http.StatusUnauthorized)
			_ = loginPage.Execute(w, "The apiserver does not accept this token.")
			return
		}
		logger.V(2).Info("Console login", "user", user.Username)
		http.SetCookie(w, &http.Cookie{Name: TokenCookie, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
			Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"})
		http.Redirect(w, r, "/", http.StatusSeeOther)
	}
}

// logout forgets the cookie.
func logout(w http.ResponseWriter, r *http.Request) {
	if err := sameOrigin(r); err != nil {
		http.Error(w, "Forbidden: cross-site request: "+err.Error(), http.StatusForbidden)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: TokenCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// contentSecurityPolicy lets the page load its own script, style and stream only; the bars' widths
// are style attributes (style-src-attr).
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; style-src-attr 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// withSecurityHeaders sets the Content-Security-Policy and its companions on every response.
func withSecurityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		if strings.HasPrefix(r.URL.Path, "/api/") {
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}
