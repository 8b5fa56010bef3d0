package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"slices"
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

// SessionCookie names a login's session: an opaque random id (the token stays on the server). The
// __Host- prefix makes browsers keep it only when it is Secure, host-only and for Path=/.
const SessionCookie = "__Host-accord-console-session"

// DefaultTokenAudience is the audience the console's TokenReviews ask for: a token authenticates
// only if it was minted for it (kubectl create token SA --audience accord-console).
const DefaultTokenAudience = "accord-console"

// Defaults of AccessOptions' zero values.
const (
	DefaultSessionMaxAge        = 8 * time.Hour
	DefaultSessionIdleTimeout   = time.Hour
	DefaultMaxSessions          = 1000
	DefaultFailedLogins         = 10
	DefaultFailedLoginInterval  = 30 * time.Second
	DefaultMaxStreamsPerSession = 4
)

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

// AccessOptions configure Access; zero values take the Default* constants.
type AccessOptions struct {
	// Explain is the permission explain needs (checked with a SubjectAccessReview).
	Explain authorizationv1.ResourceAttributes
	// ExplainInterval is how often one user may run explain (a token bucket of one); 0: no limit.
	ExplainInterval time.Duration
	// Audience is what the TokenReviews ask for: a token minted for another audience (the
	// apiserver's own, a pod's default token) is refused. DefaultTokenAudience when empty.
	Audience string
	// SessionMaxAge ends a session this long after its login, SessionIdleTimeout after this long
	// without a request; a session also ends once its token stops authenticating.
	SessionMaxAge, SessionIdleTimeout time.Duration
	// MaxSessions bounds the sessions held: a login beyond it ends the session idle longest.
	MaxSessions int
	// FailedLogins refused tokens (a login form's or an Authorization header's) may come from one
	// client address in a burst, one more per FailedLoginInterval; beyond that the client gets 429
	// with Retry-After and its tokens are not reviewed.
	FailedLogins        int
	FailedLoginInterval time.Duration
	// MaxStreamsPerSession bounds the open /api/stream of one session (or one bearer token).
	MaxStreamsPerSession int
}

func (o *AccessOptions) defaults() {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.SessionMaxAge, DefaultSessionMaxAge)
	def(&o.SessionIdleTimeout, DefaultSessionIdleTimeout)
	def(&o.FailedLoginInterval, DefaultFailedLoginInterval)
	if o.Audience == "" {
		o.Audience = DefaultTokenAudience
	}
	if o.MaxSessions == 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.FailedLogins == 0 {
		o.FailedLogins = DefaultFailedLogins
	}
	if o.MaxStreamsPerSession == 0 {
		o.MaxStreamsPerSession = DefaultMaxStreamsPerSession
	}
}

// Access authenticates the console's users with TokenReviews for its audience (a bearer token from
// the Authorization header, or the token of the session the login page opened) and authorises them
// with SubjectAccessReviews, through the console's own client (which needs system:auth-delegator).
type Access struct {
	client kubernetes.Interface
	opts   AccessOptions
	now    func() time.Time

	mu       sync.Mutex
	tokens   map[[32]byte]tokenAnswer
	reviews  map[string]reviewAnswer
	limiters map[string]*rate.Limiter
	// sessions by id; failures: each client address's bucket of refused tokens; streams: the open
	// streams of each caller (credential.key).
	sessions map[string]*session
	failures map[string]*rate.Limiter
	streams  map[string]int
}

// session is one login: the token it was given, kept on the server only.
type session struct {
	token         string
	created, used time.Time
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
	opts.defaults()
	return &Access{client: client, opts: opts, now: time.Now, tokens: map[[32]byte]tokenAnswer{},
		reviews: map[string]reviewAnswer{}, limiters: map[string]*rate.Limiter{},
		sessions: map[string]*session{}, failures: map[string]*rate.Limiter{}, streams: map[string]int{}}
}

// credential is how a request authenticates: a bearer token from its Authorization header, or the
// token of the live session its cookie names.
type credential struct {
	token string
	// session is the session's id; "" for an Authorization header.
	session string
	// key names the caller for the per-session stream cap: the session, or the token's hash.
	key string
}

// credentialOf returns the request's credential; false: it has none (or its session has ended).
func (a *Access) credentialOf(r *http.Request) (credential, bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		t, ok := strings.CutPrefix(h, "Bearer ")
		if t = strings.TrimSpace(t); !ok || t == "" {
			return credential{}, false
		}
		sum := sha256.Sum256([]byte(t))
		return credential{token: t, key: "token:" + hex.EncodeToString(sum[:])}, true
	}
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return credential{}, false
	}
	token, ok := a.sessionToken(c.Value)
	if !ok {
		return credential{}, false
	}
	return credential{token: token, session: c.Value, key: "session:" + c.Value}, true
}

// sessionToken returns the token of session id and marks it used; false: no such session, or it
// has expired (and is forgotten).
func (a *Access) sessionToken(id string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[id]
	if !ok {
		return "", false
	}
	now := a.now()
	if a.expired(s, now) {
		delete(a.sessions, id)
		return "", false
	}
	s.used = now
	return s.token, true
}

func (a *Access) expired(s *session, now time.Time) bool {
	return now.Sub(s.created) >= a.opts.SessionMaxAge || now.Sub(s.used) >= a.opts.SessionIdleTimeout
}

// newSession opens a session for token and returns its id. At MaxSessions, the expired sessions
// go first, then the one idle longest.
func (a *Access) newSession(token string) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("session id: %w", err)
	}
	id := base64.RawURLEncoding.EncodeToString(b)
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if len(a.sessions) >= a.opts.MaxSessions {
		for k, s := range a.sessions {
			if a.expired(s, now) {
				delete(a.sessions, k)
			}
		}
	}
	for len(a.sessions) >= a.opts.MaxSessions {
		oldest := ""
		for k, s := range a.sessions {
			if oldest == "" || s.used.Before(a.sessions[oldest].used) {
				oldest = k
			}
		}
		delete(a.sessions, oldest)
	}
	a.sessions[id] = &session{token: token, created: now, used: now}
	return id, nil
}

// endSession forgets session id.
func (a *Access) endSession(id string) {
	a.mu.Lock()
	delete(a.sessions, id)
	a.mu.Unlock()
}

// clientAddress is the request's remote IP (a proxy's, behind one).
func clientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// failureWait returns how long the client at addr must wait before its next token is reviewed
// (0: now).
func (a *Access) failureWait(addr string) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	l, ok := a.failures[addr]
	if !ok {
		return 0
	}
	tokens := l.TokensAt(a.now())
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) / float64(l.Limit()) * float64(time.Second))
}

// failed counts a refused token against the client at addr.
func (a *Access) failed(addr string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	l, ok := a.failures[addr]
	if !ok {
		if len(a.failures) >= maxCached {
			// Full buckets are the default state: forget them first.
			for k, b := range a.failures {
				if b.TokensAt(now) >= float64(b.Burst()) {
					delete(a.failures, k)
				}
			}
			if len(a.failures) >= maxCached {
				clear(a.failures)
			}
		}
		l = rate.NewLimiter(rate.Every(a.opts.FailedLoginInterval), a.opts.FailedLogins)
		a.failures[addr] = l
	}
	l.AllowN(now, 1)
}

// openStream counts a stream of the caller key; false: the caller has MaxStreamsPerSession open.
func (a *Access) openStream(key string) (release func(), ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.streams[key] >= a.opts.MaxStreamsPerSession {
		return nil, false
	}
	a.streams[key]++
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.streams[key]--; a.streams[key] <= 0 {
			delete(a.streams, key)
		}
	}, true
}

// retryAfter sets Retry-After to d in whole seconds, at least one.
func retryAfter(w http.ResponseWriter, d time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(d.Seconds()+0.999))))
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
	tr, err := a.client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{
		Token: token, Audiences: []string{a.opts.Audience}}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("TokenReview: %w", err)
	}
	var user *authenticationv1.UserInfo
	// The apiserver answers with the requested audiences the token is valid for.
	if tr.Status.Authenticated && slices.Contains(tr.Status.Audiences, a.opts.Audience) {
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
// of (namespaces) reads a filtered one (viewScope); anyone else gets 403. A client whose refused
// tokens exceeded FailedLogins gets 429 before any review.
func (a *Access) wrap(logger klog.Logger, namespaces func() []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if public(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		cred, ok := a.credentialOf(r)
		addr := clientAddress(r)
		if ok && cred.session == "" {
			if wait := a.failureWait(addr); wait > 0 {
				retryAfter(w, wait)
				http.Error(w, "Too many refused tokens from this address; retry in "+wait.Round(time.Second).String(), http.StatusTooManyRequests)
				return
			}
		}
		var adm admission
		if ok {
			adm = a.admit(r.Context(), logger, namespaces, cred)
			if adm.code == http.StatusUnauthorized && cred.session == "" {
				a.failed(addr)
			}
		} else {
			adm.code, adm.msg = http.StatusUnauthorized, "no token"
		}
		switch adm.code {
		case 0:
		case http.StatusUnauthorized:
			if r.Method == http.MethodGet && (r.URL.Path == "/" || r.URL.Path == "/index.html") {
				http.Redirect(w, r, "/login", http.StatusSeeOther)
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="accord-console"`)
			http.Error(w, "Unauthorized ("+adm.msg+"): log in at /login or send an Authorization: Bearer token for audience "+a.opts.Audience, http.StatusUnauthorized)
			return
		default:
			http.Error(w, adm.msg, adm.code)
			return
		}
		ctx := context.WithValue(adm.context(r.Context()), callerKey{}, caller{cred: cred, namespaces: namespaces})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// admission is Access's decision on a credential: code 0 admits user (scope nil: the whole View),
// else the status and why.
type admission struct {
	user  *authenticationv1.UserInfo
	scope *viewScope
	code  int
	msg   string
}

// context returns ctx with the admitted user and scope.
func (ad admission) context(ctx context.Context) context.Context {
	// Always set, so that a recheck's nil scope (the whole View) replaces an earlier one.
	return context.WithValue(context.WithValue(ctx, userKey{}, ad.user), scopeKey{}, ad.scope)
}

// admit reviews cred's token (a session whose token no longer authenticates ends) and authorises
// its user.
func (a *Access) admit(ctx context.Context, logger klog.Logger, namespaces func() []string, cred credential) admission {
	user, err := a.authenticate(ctx, cred.token)
	if err != nil {
		logger.Error(err, "Reviewing a console user's token")
		return admission{code: http.StatusServiceUnavailable, msg: "authentication is unavailable: " + err.Error()}
	}
	if user == nil {
		if cred.session != "" {
			a.endSession(cred.session)
			return admission{code: http.StatusUnauthorized, msg: "the session's token no longer authenticates"}
		}
		return admission{code: http.StatusUnauthorized, msg: "the token does not authenticate for audience " + a.opts.Audience}
	}
	all, err := a.allowedAll(ctx, user, viewReads)
	if err != nil {
		logger.Error(err, "Authorizing a console user", "user", user.Username)
		return admission{code: http.StatusServiceUnavailable, msg: "authorization is unavailable: " + err.Error()}
	}
	if all {
		return admission{user: user}
	}
	sc := &viewScope{access: a, user: user}
	if sc.cluster, err = a.allowedAll(ctx, user, clusterReads); err != nil {
		logger.Error(err, "Authorizing a console user", "user", user.Username)
		return admission{code: http.StatusServiceUnavailable, msg: "authorization is unavailable: " + err.Error()}
	}
	if !sc.anyNamespace(ctx, logger, namespaces()) {
		return admission{code: http.StatusForbidden, msg: fmt.Sprintf("Forbidden: user %q may list pods in none of the namespaces the console shows pods of", user.Username)}
	}
	return admission{user: user, scope: sc}
}

// caller is what wrap admitted a request on, for recheck.
type caller struct {
	cred       credential
	namespaces func() []string
}

type callerKey struct{}

// recheck decides again on the credential wrap admitted the request on (the answers are cached
// for accessCacheTTL): an ended session, a token that stopped authenticating or a user who lost
// the rights is refused.
func (a *Access) recheck(ctx context.Context, logger klog.Logger) admission {
	c, ok := ctx.Value(callerKey{}).(caller)
	if !ok {
		return admission{code: http.StatusUnauthorized, msg: "not admitted"}
	}
	if c.cred.session != "" {
		if _, live := a.sessionToken(c.cred.session); !live {
			return admission{code: http.StatusUnauthorized, msg: "the session has ended"}
		}
	}
	return a.admit(ctx, logger, c.namespaces, c.cred)
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
		retryAfter(w, wait)
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
<p class="hint">Paste a Kubernetes token minted for the audience <code>{{.Audience}}</code>, e.g. <code>kubectl create token NAME --audience {{.Audience}}</code> (a token for another audience is refused). The console reviews it with the apiserver, keeps it on the server for this session and shows what it may list: the pods of the namespaces it may list pods in, and the nodes' state if it may list nodes, ClusterScopedResources and NodeMetrics.</p>
{{if .Error}}<p role="alert">{{.Error}}</p>{{end}}
<form method="post" action="/login">
<label>Token <input type="password" name="token" autocomplete="off" required></label>
<button type="submit">Log in</button>
</form>
</section></main></body></html>
`))

type loginData struct{ Audience, Error string }

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

// login serves the login page and takes its form: a token that authenticates for the audience
// opens a session, whose id goes to a __Host- cookie (Secure, HttpOnly, SameSite=Strict, Path=/);
// a refused token counts against the client's failed logins.
func (a *Access) login(logger klog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		page := func(code int, msg string) {
			w.WriteHeader(code)
			_ = loginPage.Execute(w, loginData{Audience: a.opts.Audience, Error: msg})
		}
		if r.Method != http.MethodPost {
			page(http.StatusOK, "")
			return
		}
		if err := sameOrigin(r); err != nil {
			http.Error(w, "Forbidden: cross-site request: "+err.Error(), http.StatusForbidden)
			return
		}
		addr := clientAddress(r)
		if wait := a.failureWait(addr); wait > 0 {
			retryAfter(w, wait)
			page(http.StatusTooManyRequests, "Too many refused tokens from this address; retry in "+wait.Round(time.Second).String()+".")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
		token := strings.TrimSpace(r.PostFormValue("token"))
		if token == "" {
			page(http.StatusBadRequest, "token: required")
			return
		}
		user, err := a.authenticate(r.Context(), token)
		if err != nil {
			logger.Error(err, "Reviewing a console login")
			page(http.StatusServiceUnavailable, "The apiserver could not review the token: "+err.Error())
			return
		}
		if user == nil {
			a.failed(addr)
			logger.V(2).Info("Console login refused", "client", addr)
			page(http.StatusUnauthorized, "The apiserver does not accept this token for the audience "+a.opts.Audience+".")
			return
		}
		id, err := a.newSession(token)
		if err != nil {
			logger.Error(err, "Opening a console session")
			page(http.StatusInternalServerError, err.Error())
			return
		}
		logger.V(2).Info("Console login", "user", user.Username, "client", addr)
		http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: id, Path: "/", MaxAge: int(a.opts.SessionMaxAge.Seconds()),
			Secure: true, HttpOnly: true, SameSite: http.SameSiteStrictMode})
		http.Redirect(w, r, "/", http.StatusSeeOther)
	}
}

// logout ends the cookie's session and clears the cookie.
func (a *Access) logout(w http.ResponseWriter, r *http.Request) {
	if err := sameOrigin(r); err != nil {
		http.Error(w, "Forbidden: cross-site request: "+err.Error(), http.StatusForbidden)
		return
	}
	if c, err := r.Cookie(SessionCookie); err == nil {
		a.endSession(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1, Secure: true, HttpOnly: true, SameSite: http.SameSiteStrictMode})
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
