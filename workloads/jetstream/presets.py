"""Model presets for single-host JetStream (MaxText engine): the arguments of the ai-on-gke reference.

Source: ai-on-gke tutorials-and-examples/inference-servers/jetstream/maxtext/single-host-inference/kubectl/
deployment.yaml (Gemma 7B on v5e 2x4) and modules/jetstream-maxtext-deployment (the models it supports:
gemma-7b, llama2-7b, llama2-13b; tokenizer by model family).
"""

from __future__ import annotations

from dataclasses import dataclass

from stacks.serving.maxtext import CHECKPOINT_ARG, METRICS_ARG


@dataclass(frozen=True)
class JetStreamPreset:
    model_name: str
    params_billion: float
    tokenizer: str

    def args(self) -> tuple[tuple[str, str], ...]:
        """In the reference's order; the checkpoint and metrics port are filled by the stack."""
        return (
            ("model_name", self.model_name),
            ("tokenizer_path", self.tokenizer),
            ("per_device_batch_size", "4"),
            ("max_prefill_predict_length", "1024"),
            ("max_target_length", "2048"),
            ("async_checkpointing", "false"),
            ("ici_fsdp_parallelism", "1"),
            ("ici_autoregressive_parallelism", "-1"),
            ("ici_tensor_parallelism", "1"),
            ("scan_layers", "false"),
            ("weight_dtype", "bfloat16"),
            (CHECKPOINT_ARG, ""),
            ("attention", "dot_product"),
            (METRICS_ARG, ""),
        )


PRESETS: dict[str, JetStreamPreset] = {
    "gemma-7b": JetStreamPreset("gemma-7b", 8.5, "assets/tokenizer.gemma"),  # 8.5B parameters with embeddings
    "llama2-7b": JetStreamPreset("llama2-7b", 7, "assets/tokenizer.llama2"),
    "llama2-13b": JetStreamPreset("llama2-13b", 13, "assets/tokenizer.llama2"),
}
