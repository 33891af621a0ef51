//go:build tools

// The commands `make toolchain` builds from sigs.k8s.io/jobset@v0.10.1 (tooling/local/toolchain.py).
package tools

import (
	_ "sigs.k8s.io/jobset"
)
