package kube

import (
	"errors"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Defaults of ClientConfig: client-go's 5 QPS and burst 10 would throttle the status
// patches of a busy node (the kubelet raised its own to 50 and 100).
const (
	DefaultQPS   = 100
	DefaultBurst = 200
)

// ClientConfig says how to reach the API server: a kubeconfig file, or a server URL with a
// CA file and a bearer token, or, with neither, the in-cluster configuration of a pod
// (rest.InClusterConfig: the service account's token and CA, KUBERNETES_SERVICE_HOST).
type ClientConfig struct {
	// Kubeconfig is the path of a kubeconfig file; it excludes Server, CAFile and Token.
	Kubeconfig string
	// Server is the API server's URL, e.g. https://127.0.0.1:6443.
	Server string
	// CAFile is the PEM file of the CA that signed the server's certificate.
	CAFile string
	// Token is the bearer token to authenticate with.
	Token string
	// QPS and Burst bound the client's request rate; zero takes DefaultQPS and DefaultBurst.
	QPS   float32
	Burst int
	// UserAgent, if set, names the client in the server's logs.
	UserAgent string
	// InCluster returns the in-cluster configuration when neither Kubeconfig nor Server
	// is set; nil means rest.InClusterConfig (tests replace it).
	InCluster func() (*rest.Config, error)
}

// RESTConfig returns the client-go configuration cfg describes.
func RESTConfig(cfg ClientConfig) (*rest.Config, error) {
	var rc *rest.Config
	switch {
	case cfg.Kubeconfig != "" && (cfg.Server != "" || cfg.Token != "" || cfg.CAFile != ""):
		return nil, fmt.Errorf("%w: a kubeconfig excludes server, CA file and token", ErrInvalidArgument)
	case cfg.Kubeconfig != "":
		var err error
		rc, err = clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kube: loading %s: %w", cfg.Kubeconfig, err)
		}
	case cfg.Server != "":
		if cfg.Token == "" {
			return nil, fmt.Errorf("%w: a server needs a token", ErrInvalidArgument)
		}
		rc = &rest.Config{Host: cfg.Server, BearerToken: cfg.Token,
			TLSClientConfig: rest.TLSClientConfig{CAFile: cfg.CAFile}}
	case cfg.Token != "" || cfg.CAFile != "":
		return nil, fmt.Errorf("%w: a token or CA file without a server", ErrInvalidArgument)
	default:
		inCluster := cfg.InCluster
		if inCluster == nil {
			inCluster = rest.InClusterConfig
		}
		var err error
		if rc, err = inCluster(); err != nil {
			return nil, fmt.Errorf("%w: neither a kubeconfig nor a server, and not in a cluster: %w", ErrInvalidArgument, err)
		}
	}
	if cfg.QPS < 0 || cfg.Burst < 0 {
		return nil, fmt.Errorf("%w: negative QPS or burst", ErrInvalidArgument)
	}
	rc.QPS, rc.Burst = cfg.QPS, cfg.Burst
	if rc.QPS == 0 {
		rc.QPS = DefaultQPS
	}
	if rc.Burst == 0 {
		rc.Burst = DefaultBurst
	}
	if cfg.UserAgent != "" {
		rc.UserAgent = cfg.UserAgent
	}
	return rc, nil
}

// NewClient returns a clientset for cfg (in-cluster when neither a kubeconfig nor a server
// is given).
func NewClient(cfg ClientConfig) (kubernetes.Interface, error) {
	rc, err := RESTConfig(cfg)
	if err != nil {
		return nil, err
	}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, errors.Join(ErrInvalidArgument, err)
	}
	return c, nil
}
