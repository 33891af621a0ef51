//go:build tools

// The commands `make toolchain` builds from github.com/pulumi/pulumi-kubernetes/provider/v4@v4.0.0-20260115033456-f47bc2d6f199 (tooling/local/toolchain.py).
package tools

import (
	_ "github.com/pulumi/pulumi-kubernetes/provider/v4/cmd/pulumi-resource-kubernetes"
)
