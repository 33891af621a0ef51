//go:build tools

// The commands `make toolchain` builds from sigs.k8s.io/kwok@v0.8.0 (tooling/local/toolchain.py).
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
