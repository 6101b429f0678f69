// Package manifest is the kubelet's file pod source (--pod-manifest-path, the static pod
// manifest directory), for a podlife node.
//
// Contract:
//
//   - Read lists a directory (or reads one file) as the kubelet's file source does: in a
//     directory, every regular file whose name does not start with "." is one pod manifest,
//     in name order; subdirectories are not entered. A manifest is YAML or JSON, one Pod
//     (apiVersion v1, kind Pod, a name) of at most 10 MiB.
//   - Every pod gets the kubelet's applyDefaults for a file: a UID (if the manifest has
//     none) from the FNV-128a hash of the decoded pod, "host:<nodeName>" and
//     "file:<path>"; the name suffixed "-<nodeName>" (node name lower-cased); the namespace
//     "default" if empty; spec.nodeName; the annotation kubernetes.io/config.hash equal to
//     the UID; a toleration {operator: Exists, effect: NoExecute} (all NoExecute taints);
//     status.phase Pending. Then the API server's defaults (apitest.DefaultPod), as the
//     kubelet's decoder applies the scheme's defaults. The kubernetes.io/config.source
//     annotation is not set here: podlife's config mux sets it from the update's Source.
//   - A manifest that cannot be read, decoded or is invalid is reported (Read's per-file
//     errors, the Source's logger, with the kubelet's words "Could not process manifest
//     file") and skipped; the others are still delivered. A missing path delivers an empty
//     set, as the kubelet (which marks the source seen).
//   - Source re-lists every Period (DefaultPeriod, 20 s, the kubelet's
//     fileCheckFrequency), and once at start, and sends each listing as a config.Set
//     update of source "file" (SourceName): a pod whose file changed gets a new UID, so
//     the node kills the old pod and starts the new one; a removed file's pod goes away.
//
// Difference from the kubelet: the kubelet hashes its internal (unversioned) Pod type
// after the scheme's defaulting with DeepHashObject; this package hashes the v1 Pod
// as decoded, before defaults, with the same dump (k8s.io/apimachinery/pkg/util/dump
// ForHash) and the same suffix. UIDs are stable for the same file content, node and
// path, and change when any of them changes, but are not equal to the kubelet's for the
// same file. The kubelet's full API validation (ValidatePodCreate) is reduced to the
// checks listed in Decode; the kubelet's refusals of API object references (secrets,
// config maps, service accounts, ClusterTrustBundle and ResourceClaims) are kept.
package manifest

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/dump"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	"github.com/podlife/podlife/apitest"
	"github.com/podlife/podlife/config"
)

const (
	// SourceName is the kubelet's name of the file source (kubetypes.FileSource).
	SourceName = "file"
	// DefaultPeriod is the kubelet's default fileCheckFrequency.
	DefaultPeriod = 20 * time.Second
	// MaxManifestSize is the kubelet's maxConfigLength.
	MaxManifestSize = 10 << 20
	// ConfigHashAnnotationKey is the kubelet's kubernetes.io/config.hash.
	ConfigHashAnnotationKey = "kubernetes.io/config.hash"
)

// Errors. Read's and Decode's errors wrap one of these.
var (
	// ErrInvalid: a manifest could not be decoded as a pod, or the pod is invalid.
	ErrInvalid = errors.New("manifest: invalid pod")
	// ErrPath: the manifest path is neither a directory nor a regular file, or cannot be
	// read at all.
	ErrPath = errors.New("manifest: bad path")
)

// Decode parses one manifest (YAML or JSON) read from file path for node nodeName and
// applies the kubelet's defaults (see the package doc). It refuses what the kubelet
// refuses: not a v1 Pod ("couldn't parse as pod"), a pod without a name ("name is needed
// for the pod"), a generated name that is not a DNS-1123 subdomain, without containers, with a container without a name or image, with
// duplicate container names, and pods referencing API objects ("static pods may not
// reference ...").
func Decode(data []byte, path, nodeName string) (*v1.Pod, error) {
	if len(data) > MaxManifestSize {
		return nil, fmt.Errorf("%w: %v: manifest larger than %d bytes", ErrInvalid, path, MaxManifestSize)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v: couldn't parse as pod(%v), please check config file", ErrInvalid, path, err)
	}
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(js, &tm); err != nil {
		return nil, fmt.Errorf("%w: %v: couldn't parse as pod(%v), please check config file", ErrInvalid, path, err)
	}
	if tm.Kind == "" || tm.APIVersion == "" {
		return nil, fmt.Errorf("%w: %v: couldn't parse as pod(Object 'Kind' or 'apiVersion' is missing), please check config file", ErrInvalid, path)
	}
	if tm.Kind != "Pod" || tm.APIVersion != "v1" {
		return nil, fmt.Errorf("%w: %v: couldn't parse as pod(%s %s is not a v1 Pod), please check config file", ErrInvalid, path, tm.APIVersion, tm.Kind)
	}
	pod := &v1.Pod{}
	if err := yaml.UnmarshalStrict(js, pod); err != nil {
		if err2 := yaml.Unmarshal(js, pod); err2 != nil {
			return nil, fmt.Errorf("%w: %v: couldn't parse as pod(%v), please check config file", ErrInvalid, path, err2)
		}
	}
	if pod.Name == "" {
		return nil, fmt.Errorf("%w: name is needed for the pod", ErrInvalid)
	}
	applyDefaults(pod, path, nodeName)
	apitest.DefaultPod(pod)
	if err := validate(pod); err != nil {
		return nil, err
	}
	return pod, nil
}

// applyDefaults is the kubelet's applyDefaults for a file source.
func applyDefaults(pod *v1.Pod, path, nodeName string) {
	if pod.UID == "" {
		h := fnv.New128a()
		fmt.Fprintf(h, "%v", dump.ForHash(pod))
		fmt.Fprintf(h, "host:%s", nodeName)
		fmt.Fprintf(h, "file:%s", path)
		pod.UID = types.UID(hex.EncodeToString(h.Sum(nil)))
	}
	pod.Name = fmt.Sprintf("%s-%s", pod.Name, strings.ToLower(nodeName))
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	pod.Spec.NodeName = nodeName
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[ConfigHashAnnotationKey] = string(pod.UID)
	addToleration(pod, v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute})
	pod.Status.Phase = v1.PodPending
}

// addToleration is the kubelet's AddOrUpdateTolerationInPod: an equal toleration
// (key, operator, value, effect) is replaced, else t is appended.
func addToleration(pod *v1.Pod, t v1.Toleration) {
	for i := range pod.Spec.Tolerations {
		if pod.Spec.Tolerations[i].MatchToleration(&t) {
			pod.Spec.Tolerations[i] = t
			return
		}
	}
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, t)
}

func validate(pod *v1.Pod) error {
	if errs := validation.IsDNS1123Subdomain(pod.Name); len(errs) > 0 {
		return fmt.Errorf("%w: metadata.name: Invalid value: %q: %s", ErrInvalid, pod.Name, strings.Join(errs, "; "))
	}
	if len(pod.Spec.Containers) == 0 {
		return fmt.Errorf("%w: spec.containers: Required value", ErrInvalid)
	}
	seen := map[string]bool{}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i, c := range cs {
			if c.Name == "" {
				return fmt.Errorf("%w: spec.containers[%d].name: Required value", ErrInvalid, i)
			}
			if c.Image == "" {
				return fmt.Errorf("%w: spec.containers[%d].image: Required value", ErrInvalid, i)
			}
			if seen[c.Name] {
				return fmt.Errorf("%w: spec.containers[%d].name: Duplicate value: %q", ErrInvalid, i, c.Name)
			}
			seen[c.Name] = true
		}
	}
	if r := apiReference(pod); r != "" {
		return fmt.Errorf("%w: static pods may not reference %s", ErrInvalid, r)
	}
	return nil
}

// apiReference is the kubelet's HasAPIObjectReference (the first kind of API object the
// pod references, or "").
func apiReference(pod *v1.Pod) string {
	if pod.Spec.ServiceAccountName != "" && pod.Spec.ServiceAccountName != "default" {
		return "serviceaccounts"
	}
	if len(pod.Spec.ResourceClaims) > 0 {
		return "resourceclaims"
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.Secret != nil:
			return "secrets"
		case v.ConfigMap != nil:
			return "configmaps"
		case v.PersistentVolumeClaim != nil || v.Ephemeral != nil:
			return "persistentvolumeclaims"
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				switch {
				case s.Secret != nil:
					return "secrets"
				case s.ConfigMap != nil:
					return "configmaps"
				case s.ServiceAccountToken != nil:
					return "serviceaccounts (via projected volumes)"
				case s.ClusterTrustBundle != nil:
					return "clustertrustbundles"
				}
			}
		}
	}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			for _, e := range c.EnvFrom {
				if e.SecretRef != nil {
					return "secrets"
				}
				if e.ConfigMapRef != nil {
					return "configmaps"
				}
			}
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					return "secrets"
				}
				if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
					return "configmaps"
				}
			}
		}
	}
	return ""
}

// FileError is a manifest that was skipped.
type FileError struct {
	Path string
	Err  error
}

// Read reads the pods of path (a directory or one file) for node nodeName, as the
// kubelet's listConfig. It returns the pods and the manifests skipped; err (wrapping
// ErrPath) means nothing could be read; a missing path is no pods and no error.
func Read(path, nodeName string) (pods []*v1.Pod, skipped []FileError, err error) {
	pods = []*v1.Pod{}
	fi, err := os.Stat(path)
	if err != nil {
		if os.IsNotExist(err) {
			return pods, nil, nil
		}
		return pods, nil, fmt.Errorf("%w: %v", ErrPath, err)
	}
	switch {
	case fi.IsDir():
		names, err := filepath.Glob(filepath.Join(path, "[^.]*"))
		if err != nil {
			return pods, nil, fmt.Errorf("%w: glob failed: %v", ErrPath, err)
		}
		sort.Strings(names)
		for _, p := range names {
			st, err := os.Stat(p)
			switch {
			case err != nil:
				if !os.IsNotExist(err) {
					skipped = append(skipped, FileError{p, fmt.Errorf("%w: Could not get metadata: %v", ErrPath, err)})
				}
			case st.IsDir():
				skipped = append(skipped, FileError{p, fmt.Errorf("%w: Provided manifest path is a directory, not recursing into manifest path", ErrPath)})
			case st.Mode().IsRegular():
				pod, err := readFile(p, nodeName)
				if err != nil {
					if !errors.Is(err, os.ErrNotExist) {
						skipped = append(skipped, FileError{p, err})
					}
					continue
				}
				pods = append(pods, pod)
			default:
				skipped = append(skipped, FileError{p, fmt.Errorf("%w: Manifest path is not a directory or file (mode %v)", ErrPath, st.Mode())})
			}
		}
		return pods, skipped, nil
	case fi.Mode().IsRegular():
		pod, err := readFile(path, nodeName)
		if err != nil {
			return pods, []FileError{{path, err}}, nil
		}
		return append(pods, pod), nil, nil
	default:
		return pods, nil, fmt.Errorf("%w: path is not a directory or file", ErrPath)
	}
}

func readFile(path, nodeName string) (*v1.Pod, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxManifestSize+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return Decode(data, path, nodeName)
}

// Source feeds the pods of a manifest path to a node. Run it with Run.
type Source struct {
	// Path is the manifest directory or file (the kubelet's --pod-manifest-path).
	Path string
	// NodeName is the node's name (pod names get "-<NodeName>").
	NodeName string
	// Update receives every listing as a config.Set of source "file" (node.Node.Update).
	Update func(context.Context, config.PodUpdate) error
	// Period is the re-list period; 0 means DefaultPeriod.
	Period time.Duration
	// Clock drives the period; nil means the real clock.
	Clock clock.Clock
	// Logger receives the skipped manifests; nil discards them.
	Logger *slog.Logger
}

// Run lists Path at once and every Period until ctx ends, sending each listing to
// Update. It returns nil when ctx ends, or Update's error.
func (s *Source) Run(ctx context.Context) error {
	period := s.Period
	if period <= 0 {
		period = DefaultPeriod
	}
	clk := s.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	log := s.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if s.Update == nil {
		return errors.New("manifest: Source.Update is required")
	}
	for {
		if err := s.list(ctx, log); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-clk.After(period):
		}
	}
}

func (s *Source) list(ctx context.Context, log *slog.Logger) error {
	pods, skipped, err := Read(s.Path, s.NodeName)
	if err != nil {
		// The kubelet logs and sends nothing: the previous listing stands.
		log.Error("Unable to read config path", "path", s.Path, "err", err)
		return nil
	}
	for _, e := range skipped {
		log.Error("Could not process manifest file", "path", e.Path, "err", e.Err)
	}
	return s.Update(ctx, config.PodUpdate{Op: config.Set, Source: SourceName, Pods: pods})
}
