//go:build tools

// The commands `make toolchain` builds from go.etcd.io/etcd/server/v3@v3.6.6 (tooling/local/toolchain.py).
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
)
