//go:build tools

// The commands `make toolchain` builds from sigs.k8s.io/kueue@v0.17.1 (tooling/local/toolchain.py).
package tools

import (
	_ "sigs.k8s.io/kueue/cmd/kueue"
)
