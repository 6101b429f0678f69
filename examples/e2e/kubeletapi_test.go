package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/examples/cri"
	"github.com/podlife/podlife/examples/kubeletapi"
	"github.com/podlife/podlife/examples/nodeinfo"
)

// TestE2EKubeletAPI: the node's kubelet API (package kubeletapi, wired as nodeagent -port
// wires it: client CA, TokenReview, SubjectAccessReview) on the CRI node of a registered
// node1 whose status announces its InternalIP and the API's port; the API server reaches it
// with its kubelet client certificate (hack/e2e.sh). Through the API server with client-go,
// as kubectl does:
//   - logs: tailLines, limitBytes, timestamps, follow (a line written by an exec while the
//     stream is open arrives on it; the stream ends when its container exits), previous
//     (the log of a container's instance before its restart);
//   - exec over websocket (kubectl's first choice) and SPDY: stdout and the exit code;
//   - port-forward over SPDY and over websocket to the container's HTTP server: a request
//     and its answer through the tunnel.
//
// Straight to the node's port: anonymous 401, a service account without nodes/proxy 403,
// one granted it 200, the API server's client certificate 200.
func TestE2EKubeletAPI(t *testing.T) {
	admin, nodeClient, endpoint, image := criEnv(t)
	dir := os.Getenv(EnvAPIServer)
	ctx, cancel := context.WithTimeout(t.Context(), 4*testTimeout)
	defer cancel()
	// The node's address (hack/e2e.sh's network namespace gives it 10.87.0.2).
	ips, err := nodeinfo.HostIPs()
	if err != nil || len(ips) == 0 {
		t.Fatalf("no host address: %v %v", ips, err)
	}
	nodeIP := ips[0]
	ln, err := net.Listen("tcp", net.JoinHostPort(nodeIP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port

	// The CRI node, registered with its address and the kubelet API's port, and the API on
	// it, as nodeagent -port -client-ca-file -authentication-token-webhook
	// (-authorization-mode Webhook, no -anonymous-auth).
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110"),
		v1.ResourceEphemeralStorage: resource.MustParse("20Gi")}
	rt, _ := startCRINode(t, nodeClient, cri.Config{Endpoint: endpoint, BackOffInitial: time.Second, BackOffMax: 2 * time.Second},
		agent.Config{HostIPs: []string{nodeIP}}, withRegistration(admin, nodeRegistration{resources: rl,
			addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: nodeIP}}, kubeletPort: int32(port)}))
	authn, authz, err := kubeletapi.NewAuth(kubeletapi.AuthConfig{Client: nodeClient,
		ClientCAFile: filepath.Join(dir, "ca.crt"), TokenWebhook: true})
	if err != nil {
		t.Fatal(err)
	}
	tc, err := kubeletapi.TLSConfig("", "", node, []net.IP{net.ParseIP(nodeIP)})
	if err != nil {
		t.Fatal(err)
	}
	list := func(ctx context.Context) ([]v1.Pod, error) {
		pl, err := nodeClient.CoreV1().Pods("").List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
		if err != nil {
			return nil, err
		}
		return pl.Items, nil
	}
	h := kubeletapi.Secure(node, authn, authz, kubeletapi.Handler(kubeletapi.HandlerConfig{Pods: list, Runtime: rt}))
	serveCtx, stopServe := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- kubeletapi.Serve(serveCtx, ln, tc, h) }()
	t.Cleanup(func() {
		stopServe()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	waitReady(t, ctx, admin, "")

	// main serves HTTP and runs; restarts exits after 3 s, again and again (restartPolicy
	// Always), for --previous.
	httpPort := freePort(t)
	pod := criPod(t, "kapi", image, v1.RestartPolicyAlways, 1,
		"-print", "first line", "-http", fmt.Sprintf("127.0.0.1:%d", httpPort))
	pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "restarts", Image: image,
		ImagePullPolicy: v1.PullNever, Args: []string{"-print", "an instance", "-exit-after", "3s"}})
	removeLeftovers(t, rt, pod)
	pw := watchPod(t, ctx, admin, pod.Name)
	pod = createPod(t, ctx, admin, pod)
	t.Cleanup(func() { deletePod(t, context.Background(), admin, pod.Name, ptr.To[int64](0)) })
	pw.waitFor(t, ctx, "main Running", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool {
			st := containerStatus(e.Pod, "main")
			return st != nil && st.State.Running != nil
		})
	})
	started := time.Now()

	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	pods := admin.CoreV1().Pods(namespace)
	logs := func(o v1.PodLogOptions) string {
		t.Helper()
		b, err := pods.GetLogs(pod.Name, &o).DoRaw(ctx)
		if err != nil {
			t.Fatalf("logs %+v: %v (%s)", o, err, b)
		}
		return string(b)
	}
	// The container's first lines may take a moment to reach its log file.
	const firstLines = "testimage: serving /healthz on 127.0.0.1:%d\nfirst line\ntestimage: started (pid 1)\n"
	want := fmt.Sprintf(firstLines, httpPort)
	for got := ""; got != want; {
		if got = logs(v1.PodLogOptions{Container: "main"}); got != want && !strings.HasPrefix(want, got) {
			t.Fatalf("logs: %q, want %q", got, want)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("logs: %q, want %q", got, want)
		case <-time.After(200 * time.Millisecond):
		}
	}
	if got := logs(v1.PodLogOptions{Container: "main", TailLines: ptr.To[int64](1)}); got != "testimage: started (pid 1)\n" {
		t.Errorf("logs --tail 1: %q", got)
	}
	if got := logs(v1.PodLogOptions{Container: "main", LimitBytes: ptr.To[int64](12)}); got != "testimage: s" {
		t.Errorf("logs --limit-bytes 12: %q", got)
	}
	got := logs(v1.PodLogOptions{Container: "main", TailLines: ptr.To[int64](2), Timestamps: true})
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 2 {
		t.Errorf("logs --tail 2 --timestamps: %q", got)
	}
	for i, l := range lines {
		ts, text, _ := strings.Cut(l, " ")
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil || at.Before(started.Add(-time.Minute)) || at.After(time.Now()) {
			t.Errorf("logs --timestamps: line %q: time %v %v", l, at, err)
		}
		if wantText := []string{"first line", "testimage: started (pid 1)"}[min(i, 1)]; text != wantText {
			t.Errorf("logs --timestamps: line %q, want the text %q", l, wantText)
		}
	}

	// Exec, as kubectl exec: websocket (v5) first, SPDY as its fallback; both here.
	execURL := func(cmd ...string) *rest.Request {
		return admin.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod.Name).SubResource("exec").
			VersionedParams(&v1.PodExecOptions{Container: "main", Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	}
	executors := map[string]func(cmd ...string) (remotecommand.Executor, error){
		"websocket": func(cmd ...string) (remotecommand.Executor, error) {
			return remotecommand.NewWebSocketExecutor(cfg, "GET", execURL(cmd...).URL().String())
		},
		"spdy": func(cmd ...string) (remotecommand.Executor, error) {
			return remotecommand.NewSPDYExecutor(cfg, "POST", execURL(cmd...).URL())
		},
	}
	for _, proto := range []string{"websocket", "spdy"} {
		for _, tt := range []struct {
			file, stdout string
			code         int
		}{{"/testimage", "/testimage: there\n", 0}, {"/nothing", "/nothing: not there\n", 1}} {
			ex, err := executors[proto]("/testimage", "-check", tt.file)
			if err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
			code := 0
			var exitErr utilexec.CodeExitError
			if errors.As(err, &exitErr) {
				code, err = exitErr.Code, nil
			}
			if err != nil || code != tt.code || stdout.String() != tt.stdout || stderr.Len() != 0 {
				t.Errorf("exec (%s) /testimage -check %s: %v, exit code %d, stdout %q, stderr %q; want %d, %q",
					proto, tt.file, err, code, stdout.String(), stderr.String(), tt.code, tt.stdout)
			}
		}
	}

	// Follow, as kubectl logs -f: what the container writes while the stream is open (here
	// by an exec writing to its PID 1's stdout) arrives on it.
	stream, err := pods.GetLogs(pod.Name, &v1.PodLogOptions{Container: "main", Follow: true}).Stream(ctx)
	if err != nil {
		t.Fatalf("logs -f: %v", err)
	}
	followed := make(chan string, 100)
	go func() {
		defer close(followed)
		sc := bufio.NewScanner(stream)
		for sc.Scan() {
			followed <- sc.Text()
		}
	}()
	next := func(what string) string {
		t.Helper()
		select {
		case l, ok := <-followed:
			if !ok {
				t.Fatalf("logs -f ended waiting for %s", what)
			}
			return l
		case <-ctx.Done():
			t.Fatalf("logs -f: no %s: %v", what, ctx.Err())
		}
		return ""
	}
	for i, w := range strings.SplitAfter(strings.TrimSuffix(want, "\n"), "\n") {
		if l := next("the first lines"); l != strings.TrimSuffix(w, "\n") {
			t.Fatalf("logs -f: line %d %q, want %q", i, l, w)
		}
	}
	for i := range 2 {
		line := fmt.Sprintf("written later %d", i)
		ex, err := executors["spdy"]("/testimage", "-append", "/proc/1/fd/1", "-print", line)
		if err != nil {
			t.Fatal(err)
		}
		if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: io.Discard, Stderr: io.Discard}); err != nil {
			t.Fatalf("exec writing to the container's stdout: %v", err)
		}
		written := time.Now()
		if l := next(line); l != line {
			t.Fatalf("logs -f: %q, want %q", l, line)
		}
		t.Logf("logs -f: %q seen %v after the exec that wrote it returned", line, time.Since(written).Round(time.Millisecond))
	}
	stream.Close()

	// Port-forward, as kubectl port-forward: SPDY, and SPDY tunnelled over websocket.
	pfURL := admin.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod.Name).SubResource("portforward").URL()
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wsDialer, err := portforward.NewSPDYOverWebsocketDialer(pfURL, cfg)
	if err != nil {
		t.Fatal(err)
	}
	dialers := []struct {
		name string
		d    httpstream.Dialer
	}{
		{"spdy", spdy.NewDialer(upgrader, &http.Client{Transport: transport}, "POST", pfURL)},
		{"websocket", wsDialer},
	}
	for _, dd := range dialers {
		stopPF, readyPF := make(chan struct{}), make(chan struct{})
		fw, err := portforward.NewOnAddresses(dd.d, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", httpPort)}, stopPF, readyPF, io.Discard, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		pfDone := make(chan error, 1)
		go func() { pfDone <- fw.ForwardPorts() }()
		select {
		case <-readyPF:
		case err := <-pfDone:
			t.Fatalf("port-forward (%s): %v", dd.name, err)
		case <-ctx.Done():
			t.Fatalf("port-forward (%s) not ready", dd.name)
		}
		fwPorts, err := fw.GetPorts()
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // two connections through one forward
			resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", fwPorts[0].Local))
			if err != nil {
				t.Errorf("port-forward (%s): GET /healthz: %v", dd.name, err)
				continue
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || string(body) != "ok\n" {
				t.Errorf("port-forward (%s): GET /healthz: %d %q", dd.name, resp.StatusCode, body)
			}
		}
		close(stopPF)
		if err := <-pfDone; err != nil {
			t.Errorf("port-forward (%s): %v", dd.name, err)
		}
	}

	// Straight to the node's port, as the kubelet's authentication and authorization see it.
	kubeletClientCert, err := tls.LoadX509KeyPair(filepath.Join(dir, "kubelet-client.crt"), filepath.Join(dir, "kubelet-client.key"))
	if err != nil {
		t.Fatal(err)
	}
	call := func(token string, certs ...tls.Certificate) (int, string) {
		t.Helper()
		c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: certs}}}
		defer c.CloseIdleConnections()
		req, err := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("https://%s/pods", net.JoinHostPort(nodeIP, fmt.Sprint(port))), nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	token := func(sa string) string {
		t.Helper()
		acct := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: namespace}}
		if _, err := admin.CoreV1().ServiceAccounts(namespace).Create(ctx, acct, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = admin.CoreV1().ServiceAccounts(namespace).Delete(context.Background(), sa, metav1.DeleteOptions{})
		})
		tr, err := admin.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa, &authnv1.TokenRequest{
			Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	const proxyRole = "podlife-e2e-nodes-proxy"
	grantNodesProxy(t, ctx, admin, proxyRole, "kubeletapi-proxy")
	for _, tt := range []struct {
		name  string
		token string
		certs []tls.Certificate
		want  int
	}{
		{name: "anonymous", want: http.StatusUnauthorized},
		{name: "a bad token", token: "not-a-token", want: http.StatusUnauthorized},
		{name: "a service account without nodes/proxy", token: token("kubeletapi-none"), want: http.StatusForbidden},
		{name: "a service account granted nodes/proxy", token: token("kubeletapi-proxy"), want: http.StatusOK},
		{name: "the API server's client certificate", certs: []tls.Certificate{kubeletClientCert}, want: http.StatusOK},
	} {
		code, body := call(tt.token, tt.certs...)
		if code != tt.want || (code == http.StatusOK && !strings.Contains(body, pod.Name)) {
			t.Errorf("GET /pods as %s: %d %.300q, want %d", tt.name, code, body, tt.want)
		}
	}

	// Previous: restarts' instance before the running one, as kubectl logs --previous.
	pw.waitFor(t, ctx, "a restart of restarts", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool {
			st := containerStatus(e.Pod, "restarts")
			return st != nil && st.RestartCount >= 1
		})
	})
	// A followed log ends when its container does (restarts' instance lives 3 s).
	followStart := time.Now()
	rs, err := pods.GetLogs(pod.Name, &v1.PodLogOptions{Container: "restarts", Follow: true}).Stream(ctx)
	if err != nil {
		t.Fatalf("logs -f restarts: %v", err)
	}
	b, err := io.ReadAll(rs)
	rs.Close()
	if err != nil || (strings.Contains(string(b), "an instance") && !strings.HasSuffix(string(b), "testimage: exit 0 after 3s\n")) {
		t.Errorf("logs -f of a container that exits: %v, %q", err, b)
	}
	t.Logf("logs -f of a container that exits after 3 s ended after %v", time.Since(followStart).Round(time.Millisecond))
	prev := logs(v1.PodLogOptions{Container: "restarts", Previous: true})
	if prev != "an instance\ntestimage: started (pid 1)\ntestimage: exit 0 after 3s\n" {
		t.Errorf("logs --previous: %q", prev)
	}
	// As the kubelet: kubectl's "Error from server (BadRequest): previous terminated container
	// ..." (kubectl reads logs with Stream).
	if s, err := pods.GetLogs(pod.Name, &v1.PodLogOptions{Container: "main", Previous: true}).Stream(ctx); err == nil {
		s.Close()
		t.Errorf("logs --previous of a container never restarted: no error")
	} else if wantMsg := fmt.Sprintf("previous terminated container %q in pod %q not found", "main", pod.Name); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), wantMsg) {
		t.Errorf("logs --previous of a container never restarted: %v, want BadRequest %q", err, wantMsg)
	}
}

// grantNodesProxy binds a ClusterRole allowing get and create on nodes/proxy to the
// service account sa of the test namespace, until the test ends.
func grantNodesProxy(t *testing.T, ctx context.Context, admin kubernetes.Interface, role, sa string) {
	t.Helper()
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"nodes/proxy"}, Verbs: []string{"get", "create"}}}}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: namespace}}}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), role, metav1.DeleteOptions{})
		_ = admin.RbacV1().ClusterRoles().Delete(context.Background(), role, metav1.DeleteOptions{})
	})
}
