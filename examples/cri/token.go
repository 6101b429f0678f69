package cri

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// The kubelet's token manager (pkg/kubelet/token/token_manager.go): a service account
// token is requested once and kept; it is requested again once it is older than 80% of
// its lifetime or than 24 h (both less a jitter of up to 10 s), so a long-lived token (the
// API server extends the admission plugin's 3607 s to a year) is still rotated daily.
const (
	tokenMaxTTL    = 24 * time.Hour
	tokenMaxJitter = 10 * time.Second
)

// tokenCache keeps the pods' service account tokens by request.
type tokenCache struct {
	clock clock.Clock
	// jitter returns a fraction in [0, 1) of tokenMaxJitter; rand.Float64 by default.
	jitter func() float64

	mu    sync.Mutex
	cache map[string]*authenticationv1.TokenRequest
}

func newTokenCache(c clock.Clock) *tokenCache {
	return &tokenCache{clock: c, jitter: rand.Float64, cache: map[string]*authenticationv1.TokenRequest{}}
}

// tokenKey is the kubelet's cache key: the service account, the audiences, the lifetime
// asked and the bound object.
func tokenKey(namespace, name string, tr *authenticationv1.TokenRequest) string {
	var exp int64
	if tr.Spec.ExpirationSeconds != nil {
		exp = *tr.Spec.ExpirationSeconds
	}
	var ref authenticationv1.BoundObjectReference
	if tr.Spec.BoundObjectRef != nil {
		ref = *tr.Spec.BoundObjectRef
	}
	return fmt.Sprintf("%q/%q/%#v/%#v/%#v", name, namespace, tr.Spec.Audiences, exp, ref)
}

// get returns the cached token for tr or requests one through create. A failed refresh
// keeps the cached token while it has not expired, as the kubelet.
func (c *tokenCache) get(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest,
	create func(context.Context, string, string, *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)) (*authenticationv1.TokenRequest, error) {
	key := tokenKey(namespace, name, tr)
	c.mu.Lock()
	cached, ok := c.cache[key]
	c.mu.Unlock()
	if ok && !c.requiresRefresh(cached) {
		return cached, nil
	}
	fresh, err := create(ctx, namespace, name, tr)
	if err == nil && fresh == nil {
		err = fmt.Errorf("no TokenRequest returned")
	}
	if err != nil {
		switch {
		case !ok:
			return nil, fmt.Errorf("failed to fetch token: %w", err)
		case c.clock.Now().After(cached.Status.ExpirationTimestamp.Time):
			return nil, fmt.Errorf("token %s expired and refresh failed: %w", key, err)
		default:
			return cached, nil
		}
	}
	c.mu.Lock()
	c.cache[key] = fresh
	c.mu.Unlock()
	return fresh, nil
}

// requiresRefresh: older than 24 h, or within 20% of its lifetime of its expiry, each
// less the jitter. A token without the granted lifetime is kept.
func (c *tokenCache) requiresRefresh(tr *authenticationv1.TokenRequest) bool {
	if tr.Spec.ExpirationSeconds == nil {
		return false
	}
	now := c.clock.Now()
	exp := tr.Status.ExpirationTimestamp.Time
	ttl := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	iat := exp.Add(-ttl)
	jitter := time.Duration(c.jitter()*tokenMaxJitter.Seconds()) * time.Second
	if now.After(iat.Add(tokenMaxTTL - jitter)) {
		return true
	}
	return now.After(exp.Add(-ttl*20/100 - jitter))
}

// forget drops the tokens bound to the pod, and every expired one.
func (c *tokenCache) forget(uid types.UID) {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, tr := range c.cache {
		if (tr.Spec.BoundObjectRef != nil && tr.Spec.BoundObjectRef.UID == uid) || now.After(tr.Status.ExpirationTimestamp.Time) {
			delete(c.cache, k)
		}
	}
}
