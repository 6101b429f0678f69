package podfacts

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// annotated returns a pod with the annotations (nil: none).
func annotated(ann map[string]string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Annotations: ann}}
}

func TestIsStaticAndIsMirror(t *testing.T) {
	tests := []struct {
		name           string
		pod            *v1.Pod
		static, mirror bool
	}{
		{name: "nil pod", pod: nil},
		{name: "no annotations", pod: annotated(nil)},
		{name: "other annotations", pod: annotated(map[string]string{"a": "b"})},
		{name: "api source", pod: annotated(map[string]string{SourceAnnotationKey: APISource})},
		{name: "file source", pod: annotated(map[string]string{SourceAnnotationKey: "file"}), static: true},
		{name: "http source", pod: annotated(map[string]string{SourceAnnotationKey: "http"}), static: true},
		{name: "empty source", pod: annotated(map[string]string{SourceAnnotationKey: ""}), static: true},
		{name: "source differs only in case", pod: annotated(map[string]string{SourceAnnotationKey: "API"}), static: true},
		{name: "mirror with hash", pod: annotated(map[string]string{MirrorAnnotationKey: "abc"}), mirror: true},
		{name: "mirror with empty value", pod: annotated(map[string]string{MirrorAnnotationKey: ""}), mirror: true},
		{name: "hash only", pod: annotated(map[string]string{HashAnnotationKey: "abc"})},
		{name: "static pod seen with its mirror annotation",
			pod:    annotated(map[string]string{SourceAnnotationKey: "file", MirrorAnnotationKey: "abc"}),
			static: true, mirror: true},
		{name: "mirror pod from the API server",
			pod:    annotated(map[string]string{SourceAnnotationKey: APISource, MirrorAnnotationKey: "abc"}),
			mirror: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsStatic(tt.pod); got != tt.static {
				t.Errorf("IsStatic = %v, want %v", got, tt.static)
			}
			if got := IsMirror(tt.pod); got != tt.mirror {
				t.Errorf("IsMirror = %v, want %v", got, tt.mirror)
			}
		})
	}
}

func TestIsTerminal(t *testing.T) {
	tests := []struct {
		phase v1.PodPhase
		want  bool
	}{
		{phase: "", want: false},
		{phase: v1.PodPending, want: false},
		{phase: v1.PodRunning, want: false},
		{phase: v1.PodUnknown, want: false},
		{phase: v1.PodSucceeded, want: true},
		{phase: v1.PodFailed, want: true},
		{phase: "failed", want: false},
	}
	for _, tt := range tests {
		t.Run(string(tt.phase), func(t *testing.T) {
			if got := IsTerminalPhase(tt.phase); got != tt.want {
				t.Errorf("IsTerminalPhase(%q) = %v, want %v", tt.phase, got, tt.want)
			}
			pod := &v1.Pod{Status: v1.PodStatus{Phase: tt.phase}}
			if got := IsTerminal(pod); got != tt.want {
				t.Errorf("IsTerminal(pod in %q) = %v, want %v", tt.phase, got, tt.want)
			}
		})
	}
	if IsTerminal(nil) {
		t.Error("IsTerminal(nil) = true, want false")
	}
}

func TestFullName(t *testing.T) {
	tests := []struct {
		name, namespace, want string
	}{
		{name: "web", namespace: "default", want: "web_default"},
		{name: "etcd-node1", namespace: "kube-system", want: "etcd-node1_kube-system"},
		{name: "", namespace: "ns", want: "_ns"},
		{name: "a_b", namespace: "c", want: "a_b_c"},
	}
	for _, tt := range tests {
		if got := FullName(tt.name, tt.namespace); got != tt.want {
			t.Errorf("FullName(%q, %q) = %q, want %q", tt.name, tt.namespace, got, tt.want)
		}
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tt.name, Namespace: tt.namespace}}
		if got := PodFullName(pod); got != tt.want {
			t.Errorf("PodFullName(%s/%s) = %q, want %q", tt.namespace, tt.name, got, tt.want)
		}
	}
}

func TestContainerByName(t *testing.T) {
	cs := []v1.Container{{Name: "a", Image: "first"}, {Name: "b"}, {Name: "a", Image: "second"}}
	tests := []struct {
		name      string
		cs        []v1.Container
		wantIndex int // -1: nil
	}{
		{name: "a", cs: cs, wantIndex: 0}, // the first of two
		{name: "b", cs: cs, wantIndex: 1},
		{name: "c", cs: cs, wantIndex: -1},
		{name: "", cs: cs, wantIndex: -1},
		{name: "a", cs: nil, wantIndex: -1},
	}
	for _, tt := range tests {
		got := ContainerByName(tt.cs, tt.name)
		switch {
		case tt.wantIndex < 0 && got != nil:
			t.Errorf("ContainerByName(%q) = %+v, want nil", tt.name, got)
		case tt.wantIndex >= 0 && got != &tt.cs[tt.wantIndex]:
			t.Errorf("ContainerByName(%q) = %p, want the element %d of the slice (%p)", tt.name, got, tt.wantIndex, &tt.cs[tt.wantIndex])
		}
	}
}
