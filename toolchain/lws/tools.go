//go:build tools

// The commands `make toolchain` builds from sigs.k8s.io/lws@v0.7.0 (tooling/local/toolchain.py).
package tools

import (
	_ "sigs.k8s.io/lws/cmd"
)
