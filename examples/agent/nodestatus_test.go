package agent

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podlife/podlife/examples/nodeinfo"
	"github.com/podlife/podlife/examples/nodestatus"
	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// Config.NodeStatus registers the agent's node and keeps it Ready while its PLEG relists,
// with the node's addresses as the pods' host IPs; Run stops it.
func TestAgentNodeStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset()
		rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi"),
			v1.ResourcePods: resource.MustParse("110"), v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}
		a, err := New(Config{Server: statusmgrtest.NewFakeAPI(), Runtime: plegtest.NewRuntime(nil), HostIPs: []string{"10.0.0.5"},
			NodeStatus: &nodestatus.Config{Client: client, Node: nodeinfo.NewNode("", rl, nil),
				Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"}}}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx) }()
		time.Sleep(nodestatus.DefaultUpdateFrequency)
		synctest.Wait()
		n, err := client.CoreV1().Nodes().Get(t.Context(), DefaultNodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ready := n.Status.Conditions[len(n.Status.Conditions)-1]
		if ready.Type != v1.NodeReady || ready.Status != v1.ConditionTrue {
			t.Errorf("last condition %+v, want Ready True", ready)
		}
		if _, err := client.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(t.Context(), DefaultNodeName, metav1.GetOptions{}); err != nil {
			t.Errorf("lease: %v", err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

func TestAgentNodeStatusInvalid(t *testing.T) {
	tests := []struct {
		name string
		cfg  nodestatus.Config
		want string
	}{
		{name: "no node", cfg: nodestatus.Config{Client: fake.NewClientset()}, want: "NodeStatus.Node is required"},
		{name: "other node", cfg: nodestatus.Config{Client: fake.NewClientset(), Node: nodeinfo.NewNode("node2", nil, nil)},
			want: `"node2", not the agent's node "node1"`},
		{name: "no client", cfg: nodestatus.Config{Node: nodeinfo.NewNode("node1", nil, nil)}, want: "no Client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			_, err := New(Config{Server: statusmgrtest.NewFakeAPI(), Runtime: plegtest.NewRuntime(nil), NodeStatus: &cfg})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}
