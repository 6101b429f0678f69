package podfacts

import (
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// The API server defaults a pod's spec on every write (k8s.io/kubernetes
// pkg/apis/core/v1/defaults.go), so the kubelet never sees an empty restartPolicy, a nil
// terminationGracePeriodSeconds or an empty imagePullPolicy. A podlife caller may hand
// the library a pod that never went through an API server (a hand-built fixture, a
// manifest): every decision reads such an empty field through the functions below, so
// that it behaves exactly as with the value the API server would have stored.
// apitest.DefaultPod writes the same values into a pod.

// DefaultTerminationGracePeriodSeconds is the terminationGracePeriodSeconds the API server
// gives a pod that has none.
const DefaultTerminationGracePeriodSeconds int64 = v1.DefaultTerminationGracePeriodSeconds

// RestartPolicy returns the pod's restart policy as the API server stores it: an empty one
// is Always, and so is a nil spec. Other values are returned as they are.
func RestartPolicy(spec *v1.PodSpec) v1.RestartPolicy {
	if spec == nil || spec.RestartPolicy == "" {
		return v1.RestartPolicyAlways
	}
	return spec.RestartPolicy
}

// TerminationGracePeriodSeconds returns the pod's terminationGracePeriodSeconds as the API
// server stores it: nil is DefaultTerminationGracePeriodSeconds (30) and a negative value
// is 1 (SetDefaults_Pod). spec must not be nil.
func TerminationGracePeriodSeconds(spec *v1.PodSpec) int64 {
	switch g := spec.TerminationGracePeriodSeconds; {
	case g == nil:
		return DefaultTerminationGracePeriodSeconds
	case *g < 0:
		return 1
	default:
		return *g
	}
}

// ImagePullPolicy returns the container's imagePullPolicy as the API server stores it: an
// empty one is DefaultImagePullPolicy(c.Image). c must not be nil.
func ImagePullPolicy(c *v1.Container) v1.PullPolicy {
	if c.ImagePullPolicy != "" {
		return c.ImagePullPolicy
	}
	return DefaultImagePullPolicy(c.Image)
}

// DefaultImagePullPolicy is the pull policy the API server gives a container (or an image
// volume) of image without one: Always when the image's tag is "latest", or when it has
// neither a tag nor a digest (the tag is then "latest"); IfNotPresent otherwise, a digest
// without a tag and an image reference that does not parse included.
func DefaultImagePullPolicy(image string) v1.PullPolicy {
	if imageTag(image) == "latest" {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

// The grammar of an image reference (github.com/distribution/reference, which the API
// server's parsers.ParseImageName uses): [domain[:port]/]path[:tag][@digest].
var imageReference = func() *regexp.Regexp {
	const (
		alnum        = `[a-z0-9]+`
		separator    = `(?:[._]|__|[-]+)`
		component    = alnum + `(?:` + separator + alnum + `)*`
		domainPart   = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
		host         = `(?:` + domainPart + `(?:\.` + domainPart + `)*|\[[a-fA-F0-9:]+\])`
		domainAndPor = host + `(?::[0-9]+)?`
		name         = `(?:` + domainAndPor + `/)?` + component + `(?:/` + component + `)*`
		tag          = `[\w][\w.-]{0,127}`
		digest       = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`
	)
	return regexp.MustCompile(`^(` + name + `)(?::(` + tag + `))?(?:@(` + digest + `))?$`)
}()

// anchoredIdentifier is a bare 64-hex image ID, which is not a valid repository name.
var anchoredIdentifier = regexp.MustCompile(`^[a-f0-9]{64}$`)

// digestHexLen is the length of the hex part of a digest of each algorithm the API server
// can verify.
var digestHexLen = map[string]int{"sha256": 64, "sha384": 96, "sha512": 128}

// imageTag returns the tag of image as the API server's parsers.ParseImageName reads it:
// "latest" when the reference has neither a tag nor a digest, "" when it has only a digest
// or does not parse.
func imageTag(image string) string {
	if anchoredIdentifier.MatchString(image) {
		return ""
	}
	m := imageReference.FindStringSubmatch(image)
	if m == nil || len(m[1]) > 255 {
		return ""
	}
	if d := m[3]; d != "" {
		alg, hex, _ := strings.Cut(d, ":")
		if n, ok := digestHexLen[alg]; !ok || len(hex) != n || strings.ToLower(hex) != hex {
			return ""
		}
	}
	if m[2] == "" && m[3] == "" {
		return "latest"
	}
	return m[2]
}
