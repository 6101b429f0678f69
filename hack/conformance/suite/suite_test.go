// Package suite is a small test main for the Kubernetes sig-node end-to-end tests of
// k8s.io/kubernetes v1.37.2: the packages test/e2e/common/node and test/e2e/node, without
// the rest of test/e2e (storage, cloud providers, ...), so it builds in a fraction of the
// full e2e.test's time. hack/conformance.sh builds it with `go test -c` and runs it with a
// focus on the named set (docs/CONFORMANCE.md). The flags are the e2e framework's
// (--kubeconfig, --provider, --ginkgo.focus, --ginkgo.junit-report, ...).
package suite

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"k8s.io/component-base/logs"
	"k8s.io/klog/v2"
	conformancetestdata "k8s.io/kubernetes/test/conformance/testdata"
	commontest "k8s.io/kubernetes/test/e2e/common"
	"k8s.io/kubernetes/test/e2e/framework"
	"k8s.io/kubernetes/test/e2e/framework/config"
	e2enode "k8s.io/kubernetes/test/e2e/framework/node"
	"k8s.io/kubernetes/test/e2e/framework/testfiles"
	e2etestingmanifests "k8s.io/kubernetes/test/e2e/testing-manifests"
	testfixtures "k8s.io/kubernetes/test/fixtures"

	// The tests: sig-node's common and node-specific ones.
	_ "k8s.io/kubernetes/test/e2e/common/node"
	_ "k8s.io/kubernetes/test/e2e/node"

	_ "k8s.io/kubernetes/test/e2e/framework/debug/init"
	_ "k8s.io/kubernetes/test/e2e/framework/metrics/init"
	_ "k8s.io/kubernetes/test/e2e/framework/node/init"
)

func TestMain(m *testing.M) {
	config.CopyFlags(config.Flags, flag.CommandLine)
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	flag.Parse()
	if flag.CommandLine.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unknown arguments: %s\n", flag.CommandLine.Args())
		os.Exit(2)
	}
	testfiles.AddFileSource(e2etestingmanifests.GetE2ETestingManifestsFS())
	testfiles.AddFileSource(testfixtures.GetTestFixturesFS())
	testfiles.AddFileSource(conformancetestdata.GetConformanceTestdataFS())
	framework.AfterReadingAllFlags(&framework.TestContext)
	os.Exit(m.Run())
}

// Before the specs: the cluster's nodes are schedulable (the node under test registered
// and Ready), as the e2e suite's own setup checks.
var _ = ginkgo.SynchronizedBeforeSuite(func(ctx context.Context) []byte {
	commontest.CurrentSuite = commontest.E2E
	c, err := framework.LoadClientset()
	framework.ExpectNoError(err, "loading the client")
	framework.ExpectNoError(e2enode.WaitForAllNodesSchedulable(ctx, c, framework.NewTimeoutContext().NodeSchedulable))
	nodes, err := e2enode.GetReadySchedulableNodes(ctx, c)
	framework.ExpectNoError(err)
	framework.TestContext.CloudConfig.NumNodes = len(nodes.Items)
	return nil
}, func(ctx context.Context, _ []byte) {
	commontest.CurrentSuite = commontest.E2E
})

func TestSigNode(t *testing.T) {
	logs.InitLogs()
	defer logs.FlushLogs()
	klog.EnableContextualLogging(true)
	gomega.RegisterFailHandler(framework.Fail)
	suiteConfig, reporterConfig := framework.CreateGinkgoConfig()
	ginkgo.RunSpecs(t, "podlife sig-node conformance", suiteConfig, reporterConfig)
}
