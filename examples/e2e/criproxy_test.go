package e2e

import (
	"context"
	"errors"
	"io"
	"maps"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// criProxy is a counting gRPC proxy between a CRI client (the kubelet, or podlife's
// runtime) and containerd: it forwards every call, unary or streaming, unchanged (the
// messages as raw bytes) and counts the calls and their time per method. Both sides of the
// W8 measurement talk to containerd through it, so their CRI calls are counted the same way.
type criProxy struct {
	// Endpoint is the proxy's CRI endpoint (unix:///.../cri-proxy.sock).
	Endpoint string

	srv      *grpc.Server
	upstream *grpc.ClientConn
	pumps    sync.WaitGroup

	mu    sync.Mutex
	calls map[string]int64
	spent map[string]time.Duration
	// delay holds calls of a method this long before forwarding them (set before the
	// first call); entered receives the method's name as each delayed call arrives
	// (when not nil; a send that would block is dropped).
	delay   map[string]time.Duration
	entered chan string
	// cancelled counts, per method, calls whose client ended them (its context) before
	// containerd answered.
	cancelled map[string]int64
}

// rawCodec passes messages through as bytes (named "proto", so both ends keep their
// content type).
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, errors.New("criproxy: not a raw message")
	}
	return *b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return errors.New("criproxy: not a raw message")
	}
	*b = append((*b)[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

// startCRIProxy listens on a socket in a temporary directory and forwards to endpoint until
// the test ends.
func startCRIProxy(t *testing.T, endpoint string) *criProxy {
	t.Helper()
	upstream, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20), grpc.MaxCallSendMsgSize(16<<20)))
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "cri-proxy.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		upstream.Close()
		t.Fatal(err)
	}
	p := &criProxy{Endpoint: "unix://" + sock, upstream: upstream, calls: map[string]int64{}, spent: map[string]time.Duration{},
		delay: map[string]time.Duration{}, cancelled: map[string]int64{}}
	p.srv = grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(p.forward),
		grpc.MaxRecvMsgSize(16<<20), grpc.MaxSendMsgSize(16<<20))
	served := make(chan struct{})
	go func() { _ = p.srv.Serve(l); close(served) }()
	t.Cleanup(func() {
		p.srv.Stop()
		<-served
		p.pumps.Wait()
		upstream.Close()
	})
	return p
}

// forward relays one call: the client's messages up, containerd's messages, header and
// trailer down, and containerd's status back.
func (p *criProxy) forward(_ any, ss grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(ss)
	if !ok {
		return errors.New("criproxy: no method")
	}
	start := time.Now()
	ctx, cancel := context.WithCancel(ss.Context())
	defer cancel()
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		ctx = metadata.NewOutgoingContext(ctx, md.Copy())
	}
	name := method[strings.LastIndex(method, "/")+1:]
	defer func() {
		if ss.Context().Err() != nil {
			p.mu.Lock()
			p.cancelled[name]++
			p.mu.Unlock()
		}
	}()
	if d := p.delay[name]; d > 0 {
		if p.entered != nil {
			select {
			case p.entered <- name:
			default:
			}
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
			p.count(method, start)
			return status.FromContextError(ctx.Err()).Err()
		}
	}
	cs, err := p.upstream.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method,
		grpc.ForceCodec(rawCodec{}))
	if err != nil {
		p.count(method, start)
		return err
	}
	p.pumps.Go(func() {
		for {
			var m []byte
			if err := ss.RecvMsg(&m); err != nil {
				if errors.Is(err, io.EOF) {
					_ = cs.CloseSend()
				}
				return
			}
			if cs.SendMsg(&m) != nil {
				return
			}
		}
	})
	err = p.relayDown(ss, cs)
	ss.SetTrailer(cs.Trailer())
	p.count(method, start)
	return err
}

// relayDown copies containerd's header and messages to the client until containerd ends
// the call; it returns the call's status (nil for success).
func (p *criProxy) relayDown(ss grpc.ServerStream, cs grpc.ClientStream) error {
	for first := true; ; first = false {
		var m []byte
		if err := cs.RecvMsg(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if first {
			if md, err := cs.Header(); err == nil {
				if err := ss.SendHeader(md); err != nil {
					return err
				}
			}
		}
		if err := ss.SendMsg(&m); err != nil {
			return err
		}
	}
}

func (p *criProxy) count(method string, start time.Time) {
	name := method[strings.LastIndex(method, "/")+1:]
	took := time.Since(start)
	p.mu.Lock()
	p.calls[name]++
	p.spent[name] += took
	p.mu.Unlock()
}

// Cancelled returns, per method, the calls their client ended before containerd answered.
func (p *criProxy) Cancelled() map[string]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.cancelled)
}

// Stats returns the calls forwarded so far by method name (RunPodSandbox, ...) and their
// total time.
func (p *criProxy) Stats() (map[string]int64, map[string]time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.calls), maps.Clone(p.spent)
}
