package vk_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/examples/vk"
	"github.com/podlife/podlife/examples/vk/vktest"
)

func namedPod(uid types.UID) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: uid},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox"}}}}
}

// TestStartPodWaitsForTheName: a pod whose name the provider still holds for another pod
// (one still stopping) is created as soon as the provider lets the name go, at the next
// poll; if it never does, StartPod gives up after 30 s with ErrNameTaken.
func TestStartPodWaitsForTheName(t *testing.T) {
	for _, tc := range []struct {
		name      string
		stopDelay time.Duration
		wantErr   error
		wantAfter time.Duration
	}{
		{"released after 5 s", 5 * time.Second, nil, 5 * time.Second},
		{"never released", -1, vk.ErrNameTaken, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				p := vktest.New(vktest.Config{StopDelay: tc.stopDelay})
				if err := p.CreatePod(ctx, namedPod("old")); err != nil {
					t.Fatal(err)
				}
				if err := p.DeletePod(ctx, namedPod("old")); err != nil {
					t.Fatal(err)
				}
				ad, err := vk.NewAdapter(vk.AdapterConfig{Provider: p})
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				err = ad.StartPod(ctx, namedPod("new"))
				if !errors.Is(err, tc.wantErr) && !(err == nil && tc.wantErr == nil) {
					t.Fatalf("StartPod = %v, want %v", err, tc.wantErr)
				}
				if took := time.Since(start); took < tc.wantAfter || took > tc.wantAfter+vk.DefaultPollPeriod {
					t.Errorf("StartPod returned after %v, want %v (+ one poll at most)", took, tc.wantAfter)
				}
				wantCreates := 0
				if tc.wantErr == nil {
					wantCreates = 1
				}
				if n := p.CountFor("new", vktest.Create); n != wantCreates {
					t.Errorf("CreatePod of the new pod: %d calls, want %d", n, wantCreates)
				}
			})
		})
	}
}
