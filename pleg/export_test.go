package pleg

// ThreadCPU is threadCPU, for the benchmarks of package pleg_test.
var ThreadCPU = threadCPU
