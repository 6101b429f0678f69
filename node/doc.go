// Package node is the kubelet's sync loop as a library: a node agent is node.New(cfg)
// plus Run(ctx). See the package documentation of the types for the loop's rules.
package node
