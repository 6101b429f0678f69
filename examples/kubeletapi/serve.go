package kubeletapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	certutil "k8s.io/client-go/util/cert"
)

// TLSConfig is the server's certificate: the files, or (both empty) a self-signed one for
// the node's name and addresses, as the kubelet makes when --tls-cert-file is not given.
// Client certificates are requested, not required: Secure's authenticator checks them.
func TLSConfig(certFile, keyFile, nodeName string, ips []net.IP) (*tls.Config, error) {
	var cert tls.Certificate
	var err error
	switch {
	case certFile != "" && keyFile != "":
		cert, err = tls.LoadX509KeyPair(certFile, keyFile)
	case certFile == "" && keyFile == "":
		var c, k []byte
		if c, k, err = certutil.GenerateSelfSignedCertKey(nodeName, ips, nil); err == nil {
			cert, err = tls.X509KeyPair(c, k)
		}
	default:
		return nil, fmt.Errorf("%w: give both -tls-cert-file and -tls-private-key-file, or neither", ErrInvalidConfig)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: certificate: %w", ErrInvalidConfig, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12}, nil
}

// Serve serves h over TLS on l until ctx ends.
func Serve(ctx context.Context, l net.Listener, tc *tls.Config, h http.Handler) error {
	srv := &http.Server{Handler: h, TLSConfig: tc, ReadHeaderTimeout: 30 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.ServeTLS(l, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("kubeletapi: %w", err)
	}
	return nil
}
