//go:build tools

// The commands `make toolchain` builds from github.com/pulumi/pulumi/pkg/v3@v3.274.1 (tooling/local/toolchain.py).
package tools

import (
	_ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
)
