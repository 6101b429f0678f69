package main

import (
	"context"
	"fmt"
	"net"
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/podlife/podlife/examples/kubeletapi"
)

// apiConfig is the kubelet API's flags.
type apiConfig struct {
	port              int
	address           string
	certFile, keyFile string
	auth              kubeletapi.AuthConfig
}

// serveAPI starts the kubelet API (package kubeletapi) until ctx ends: /pods lists the
// pods bound to the node on the server, /runningpods/ those of them Running, and with a
// CRI runtime the logs, exec, attach and port-forward endpoints. A port that cannot be
// listened on is an error.
func serveAPI(ctx context.Context, cfg apiConfig, client kubernetes.Interface, nodeName string, ip net.IP,
	rt kubeletapi.Runtime, say func(string, ...any)) error {
	cfg.auth.Client = client
	authn, authz, err := kubeletapi.NewAuth(cfg.auth)
	if err != nil {
		return err
	}
	var ips []net.IP
	if ip != nil {
		ips = append(ips, ip)
	}
	tc, err := kubeletapi.TLSConfig(cfg.certFile, cfg.keyFile, nodeName, ips)
	if err != nil {
		return err
	}
	list := func(running bool) kubeletapi.PodLister {
		return func(ctx context.Context) ([]v1.Pod, error) {
			pl, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{
				FieldSelector: fields.OneTermEqualSelector("spec.nodeName", nodeName).String()})
			if err != nil {
				return nil, err
			}
			if !running {
				return pl.Items, nil
			}
			var out []v1.Pod
			for _, p := range pl.Items {
				if p.Status.Phase == v1.PodRunning {
					out = append(out, p)
				}
			}
			return out, nil
		}
	}
	hc := kubeletapi.HandlerConfig{Pods: list(false), RunningPods: list(true)}
	if rt != nil {
		hc.Runtime = rt
	}
	addr := net.JoinHostPort(cfg.address, strconv.Itoa(cfg.port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("-port: %w", err)
	}
	say("# serving the kubelet API on %s (authorization %s, anonymous %v)", l.Addr(), cfg.auth.Authorization, cfg.auth.Anonymous)
	h := kubeletapi.Secure(nodeName, authn, authz, kubeletapi.Handler(hc))
	go func() {
		if err := kubeletapi.Serve(ctx, l, tc, h); err != nil {
			say("# kubelet API: %v", err)
		}
	}()
	return nil
}
