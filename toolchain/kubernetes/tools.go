//go:build tools

// The commands `make toolchain` builds from k8s.io/kubernetes@v1.35.4 (tooling/local/toolchain.py).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
