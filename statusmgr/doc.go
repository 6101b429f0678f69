// Package statusmgr is the kubelet's status manager as a library: it caches the pod
// statuses a node agent computes, writes them to the API server, and deletes a pod object
// once the pod has finished.
package statusmgr
