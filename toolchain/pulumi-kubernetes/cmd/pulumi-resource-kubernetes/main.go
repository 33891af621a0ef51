// The Kubernetes provider plugin, as github.com/pulumi/pulumi-kubernetes/provider/v4 cmd/pulumi-resource-kubernetes
// builds it: the same call, with the schema and Terraform mapping its own generator writes beside this file
// (`make toolchain` copies that folder's schema.json, terraform-mapping.json and generate.go here and runs
// `go generate`; they are git-ignored). The module zip lacks the generated files, so its main cannot be built as is.

//go:generate go run ./generate.go

package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var pulumiSchema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	provider.Serve("kubernetes", version.Version, pulumiSchema, terraformMapping)
}
