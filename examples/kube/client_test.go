package kube

import (
	"errors"
	"testing"

	"k8s.io/client-go/rest"
)

func TestRESTConfigInCluster(t *testing.T) {
	inCluster := func() (*rest.Config, error) {
		return &rest.Config{Host: "https://10.96.0.1:443", BearerTokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token"}, nil
	}
	rc, err := RESTConfig(ClientConfig{InCluster: inCluster, UserAgent: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != "https://10.96.0.1:443" || rc.QPS != DefaultQPS || rc.Burst != DefaultBurst || rc.UserAgent != "test" {
		t.Errorf("in-cluster config = host %q, QPS %v, burst %d, agent %q", rc.Host, rc.QPS, rc.Burst, rc.UserAgent)
	}

	notInCluster := errors.New("unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined")
	_, err = RESTConfig(ClientConfig{InCluster: func() (*rest.Config, error) { return nil, notInCluster }})
	if !errors.Is(err, ErrInvalidArgument) || !errors.Is(err, notInCluster) {
		t.Errorf("outside a cluster: %v, want ErrInvalidArgument wrapping the in-cluster error", err)
	}

	called := false
	_, err = RESTConfig(ClientConfig{Token: "t", InCluster: func() (*rest.Config, error) { called = true; return inCluster() }})
	if !errors.Is(err, ErrInvalidArgument) || called {
		t.Errorf("a token without a server: %v (in-cluster tried: %v), want ErrInvalidArgument", err, called)
	}
}
