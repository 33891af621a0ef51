//go:build tools

// The commands `make toolchain` builds from sigs.k8s.io/prometheus-adapter@v0.12.0 (tooling/local/toolchain.py).
package tools

import (
	_ "sigs.k8s.io/prometheus-adapter/cmd/adapter"
)
