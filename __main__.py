"""tpu-serving: an LLM-serving platform on Cloud TPUs in GKE, as one Pulumi stack per environment; a stack whose
config has `tpu-serving:fleet` is a fleet stack instead (docs/fleet.md): one model served from several regional
stacks through GKE's multi-cluster Inference Gateway (Preview). The program is the package's (tpu_serving/,
docs/package.md): another program with the package installed runs the same."""

from tpu_serving.program import run

run()
