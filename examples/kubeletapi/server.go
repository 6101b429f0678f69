// Package kubeletapi serves the kubelet's HTTP API (port 10250) for a podlife node on a
// CRI runtime, with the kubelet's security: every request is authenticated (a client
// certificate against the client CA, a bearer token through TokenReview, anonymous only
// when allowed) and authorized by SubjectAccessReview with the kubelet's mapping of paths
// to node subresources (Attributes). Authentication and authorization are
// k8s.io/apiserver's delegating authenticator and authorizer, as the kubelet's.
//
// Endpoints: /healthz, /pods and /runningpods/ (v1.PodList), /containerLogs/{ns}/{pod}/
// {container} (follow, tailLines, limitBytes, sinceSeconds, sinceTime, timestamps,
// previous; read from the runtime's CRI log files), /exec, /attach and /portForward
// (proxied, upgraded, to the URL the runtime's CRI streaming server returns).
package kubeletapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
)

// ErrInvalidConfig is returned for a Config that cannot serve.
var ErrInvalidConfig = errors.New("kubeletapi: invalid config")

// The kubelet's authorization modes (--authorization-mode).
const (
	AuthorizationWebhook     = "Webhook"
	AuthorizationAlwaysAllow = "AlwaysAllow"
)

// AuthConfig is the kubelet's authentication and authorization configuration.
type AuthConfig struct {
	// Client reaches the API server for TokenReview and SubjectAccessReview.
	Client kubernetes.Interface
	// ClientCAFile authenticates client certificates (--client-ca-file); "": none are.
	ClientCAFile string
	// TokenWebhook authenticates bearer tokens by TokenReview
	// (--authentication-token-webhook).
	TokenWebhook bool
	// Anonymous lets unauthenticated requests through as system:anonymous
	// (--anonymous-auth; they are then authorized as any other).
	Anonymous bool
	// Authorization is AuthorizationWebhook (SubjectAccessReview) or
	// AuthorizationAlwaysAllow; "" is Webhook.
	Authorization string
}

// NewAuth builds the delegating authenticator and authorizer of cfg, the kubelet's.
func NewAuth(cfg AuthConfig) (authenticator.Request, authorizer.Authorizer, error) {
	backoff := &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
	ac := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                &apiserver.AnonymousAuthConfig{Enabled: cfg.Anonymous},
		CacheTTL:                 2 * time.Minute,
		TokenAccessReviewTimeout: 10 * time.Second,
		WebhookRetryBackoff:      backoff,
	}
	if cfg.TokenWebhook {
		if cfg.Client == nil {
			return nil, nil, fmt.Errorf("%w: the token webhook needs a client", ErrInvalidConfig)
		}
		ac.TokenAccessReviewClient = cfg.Client.AuthenticationV1()
	}
	if cfg.ClientCAFile != "" {
		ca, err := dynamiccertificates.NewDynamicCAContentFromFile("client-ca-bundle", cfg.ClientCAFile)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: client CA: %w", ErrInvalidConfig, err)
		}
		ac.ClientCertificateCAContentProvider = ca
	}
	authn, _, err := ac.New()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	var authz authorizer.Authorizer
	switch cfg.Authorization {
	case AuthorizationAlwaysAllow:
		authz = authorizerfactory.NewAlwaysAllowAuthorizer()
	case "", AuthorizationWebhook:
		if cfg.Client == nil {
			return nil, nil, fmt.Errorf("%w: Webhook authorization needs a client", ErrInvalidConfig)
		}
		authz, err = authorizerfactory.DelegatingAuthorizerConfig{
			SubjectAccessReviewClient: cfg.Client.AuthorizationV1(),
			AllowCacheTTL:             5 * time.Minute,
			DenyCacheTTL:              30 * time.Second,
			WebhookRetryBackoff:       backoff,
		}.New()
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	default:
		return nil, nil, fmt.Errorf("%w: authorization mode %q (Webhook or AlwaysAllow)", ErrInvalidConfig, cfg.Authorization)
	}
	return authn, authz, nil
}

func isSubpath(p, prefix string) bool {
	prefix = strings.TrimSuffix(prefix, "/")
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}

// Attributes are the authorization attributes of a request to the node's API, the
// kubelet's: resource nodes, name the node, the verb from the HTTP method, the
// subresource from the path (stats, metrics, log, checkpoint, statusz, configz; proxy for
// the rest). /pods, /runningpods and /healthz first ask for the fine-grained pods or
// healthz subresource, then proxy: the request is allowed if any is.
func Attributes(nodeName string, u user.Info, r *http.Request) []authorizer.Attributes {
	verb := ""
	switch r.Method {
	case http.MethodPost:
		verb = "create"
	case http.MethodGet, http.MethodHead:
		verb = "get"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	}
	p := r.URL.Path
	var subs []string
	switch {
	case isSubpath(p, "/pods"), isSubpath(p, "/runningpods"):
		subs = append(subs, "pods")
	case isSubpath(p, "/healthz"):
		subs = append(subs, "healthz")
	case isSubpath(p, "/configz"):
		subs = append(subs, "configz")
	}
	switch {
	case isSubpath(p, "/stats"):
		subs = append(subs, "stats")
	case isSubpath(p, "/metrics"):
		subs = append(subs, "metrics")
	case isSubpath(p, "/logs"):
		subs = append(subs, "log")
	case isSubpath(p, "/checkpoint"):
		subs = append(subs, "checkpoint")
	case isSubpath(p, "/statusz"):
		subs = append(subs, "statusz")
	case isSubpath(p, "/flagz"):
		subs = append(subs, "configz")
	default:
		subs = append(subs, "proxy")
	}
	attrs := make([]authorizer.Attributes, 0, len(subs))
	for _, s := range subs {
		attrs = append(attrs, authorizer.AttributesRecord{User: u, Verb: verb, APIVersion: "v1", Resource: "nodes",
			Subresource: s, Name: nodeName, ResourceRequest: true, Path: p})
	}
	return attrs
}

// Secure wraps h with the kubelet's filter: 401 for a request authn does not
// authenticate, 403 for one authz allows under none of its Attributes.
func Secure(nodeName string, authn authenticator.Request, authz authorizer.Authorizer, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, ok, err := authn.AuthenticateRequest(r)
		if err != nil || !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		attrs := Attributes(nodeName, resp.User, r)
		for _, a := range attrs {
			d, _, err := authz.Authorize(r.Context(), a)
			if err == nil && d == authorizer.DecisionAllow {
				h.ServeHTTP(w, r)
				return
			}
		}
		a := attrs[len(attrs)-1]
		http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=%s, subresource=%s)",
			a.GetUser().GetName(), a.GetVerb(), a.GetResource(), a.GetSubresource()), http.StatusForbidden)
	})
}

// PodLister lists the node's pods (for /pods and /runningpods).
type PodLister func(ctx context.Context) ([]v1.Pod, error)
