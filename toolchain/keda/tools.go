//go:build tools

// The commands `make toolchain` builds from github.com/kedacore/keda/v2@v2.20.2 (tooling/local/toolchain.py).
package tools

import (
	_ "github.com/kedacore/keda/v2/cmd/operator"
	_ "github.com/kedacore/keda/v2/cmd/adapter"
	_ "github.com/kedacore/keda/v2/cmd/webhooks"
)
