"""Model presets for JetStream + MaxText on Pathways: the MaxText arguments the reference deployments use.

Source: kubernetes-engine-samples ai-ml/llm-serving-tpus-jetstream/pathways/ (Llama 3.1 405B int8 interleaved on
v6e 4x4; Llama 2 70B disaggregated on two v6e 2x4 slices). `load_parameters_path` is filled from the workload's
`checkpoint`; `maxtext` overrides replace values in place.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from stacks.serving.maxtext import CHECKPOINT_ARG


@dataclass(frozen=True)
class Probes:
    startup_initial_delay: int
    failure_threshold: int  # liveness and readiness


@dataclass(frozen=True)
class ModeSpec:
    """What one serving mode of a model needs beyond the model's own arguments."""

    extra_args: tuple[tuple[str, str], ...] = ()
    proxy_args: tuple[str, ...] = ()  # after the proxy's connection arguments (disaggregated only)
    capabilities: tuple[str, ...] = ()  # jax-tpu container capabilities the reference adds
    probes: Probes = Probes(600, 10)
    slices: int | None = None  # slices the reference serves this mode on, when it needs a fixed number


@dataclass(frozen=True)
class PathwaysPreset:
    model_name: str
    params_billion: float
    config_file: str
    args: tuple[tuple[str, str], ...]  # in the reference's order; load_parameters_path is a placeholder
    modes: dict[str, ModeSpec] = field(default_factory=dict)
    env: tuple[tuple[str, str], ...] = (("LOG_LEVEL", "INFO"),)


# The disaggregated reference's XLA flags for the Pathways proxy.
DISAGGREGATED_PROXY_XLA_FLAGS = (
    "--xla_jf_auto_cross_replica_sharding=false",
    "--xla_tpu_enable_windowed_einsum_for_reduce_scatter=false",
    "--xla_tpu_enable_windowed_einsum_for_all_gather=false",
    "--xla_tpu_prefer_latch_optimized_rhs_layouts=true",
    "--xla_tpu_enable_experimental_fusion_cost_model=false",
    "--xla_tpu_dot_dot_fusion_duplicated=false",
    "--xla_tpu_dot_dot_fusion=true",
    "--xla_jf_conv_input_fusion=true",
    "--xla_jf_conv_output_fusion=true",
    "--xla_tpu_rwb_fusion=false",
    "--xla_tpu_copy_fusion_pad_unpad_ratio=0",
    "--xla_tpu_licm_size_inflation_ratio=1",
    "--xla_tpu_copy_elision_analysis_allowance=150000",
    "--xla_tpu_copy_insertion_use_region_analysis_limit=10000",
    "--xla_tpu_order_dot_after_layout=true",
    "--xla_jf_rematerialization_percent_shared_memory_limit=100",
    "--xla_tpu_use_repeated_instance_for_preferred_prefetch_time=true",
    "--xla_tpu_enforce_prefetch_fifo_order=false",
    "--xla_tpu_prefetch_interval_picker_size_override=6000000",
    "--xla_tpu_async_copy_bandwidth_scaling_factor=1",
    "--xla_tpu_nd_short_transfer_max_chunks=-1",
    "--xla_tpu_enable_aggressive_broadcast_priority_update=true",
    "--xla_tpu_alternate_memory_benefit_scaling_factor_for_large_buffers=SQRT",
    "--xla_tpu_memory_bound_loop_optimizer_options=enabled:true",
    "--xla_tpu_enable_copy_fusion=true",
    "--xla_tpu_enable_cross_program_prefetch_freeing=false",
    "--xla_tpu_enable_dot_strength_reduction=true",
    "--xla_tpu_layout_use_dot_grouping=false",
    "--xla_tpu_msa_inefficient_use_to_copy_ratio=0.5",
    "--xla_tpu_reduce_loop_fusion_dup_with_unfusable_user=false",
    "--xla_tpu_vector_load_fusion_window=1024",
    "--xla_tpu_vector_store_fusion_window=256",
    "--xla_jf_conv_reshape_fusion=false",
    "--xla_tpu_input_conv_multi_users=false",
    "--xla_tpu_enable_multi_level_input_dot_dot_fusion=false",
    "--xla_tpu_enable_multi_level_output_dot_dot_fusion=false",
    "--xla_tpu_dot_dot_fusion_separable_convs_only=false",
    "--xla_tpu_enable_multi_level_nested_loop_fusion=true",
    "--xla_tpu_nested_dot_fusion=true",
    "--xla_tpu_enable_multi_level_nested_dot_fusion=false",
    "--xla_jf_enable_multi_output_fusion=true",
    "--xla_tpu_use_lp_llo_scheduler_for_dot_dot_fusions=false",
    "--xla_tpu_enable_flash_attention=true",
)

DISAGGREGATED = ModeSpec(
    extra_args=(
        ("compute_axis_order", "0,2,1,3"),
        ("ar_cache_axis_order", "0,2,1,3"),
        ("stack_prefill_result_cache", "True"),
        ("inference_server", "ExperimentalMaxtextDisaggregatedServer_8"),
        ("inference_benchmark_test", "True"),
        ("enable_model_warmup", "True"),
    ),
    proxy_args=DISAGGREGATED_PROXY_XLA_FLAGS,
    capabilities=("SYS_PTRACE", "NET_ADMIN", "SYS_TIME"),
    probes=Probes(240, 100),
    slices=2,  # one prefill slice and one decode slice
)

PRESETS: dict[str, PathwaysPreset] = {
    "llama3.1-405b": PathwaysPreset(
        model_name="llama3.1-405b",
        params_billion=405,
        config_file="MaxText/configs/v5e/inference/llama3_405b_v5e-64.yml",
        args=(
            ("model_name", "llama3.1-405b"),
            (CHECKPOINT_ARG, ""),
            ("max_prefill_predict_length", "1024"),
            ("max_target_length", "2048"),
            ("async_checkpointing", "false"),
            ("steps", "1"),
            ("ici_fsdp_parallelism", "1"),
            ("ici_autoregressive_parallelism", "2"),
            ("ici_tensor_parallelism", "8"),
            ("scan_layers", "false"),
            ("weight_dtype", "bfloat16"),
            ("per_device_batch_size", "6"),
            ("enable_single_controller", "true"),
            ("quantization", "int8"),
            ("quantize_kvcache", "true"),
            ("checkpoint_is_quantized", "true"),
            ("enable_model_warmup", "true"),
        ),
        modes={"interleaved": ModeSpec(probes=Probes(600, 10), slices=1), "disaggregated": DISAGGREGATED},
    ),
    "llama2-70b": PathwaysPreset(
        model_name="llama2-70b",
        params_billion=70,
        config_file="MaxText/configs/base.yml",
        args=(
            ("tokenizer_path", "assets/tokenizer.llama2"),
            (CHECKPOINT_ARG, ""),
            ("max_prefill_predict_length", "1024"),
            ("max_target_length", "2048"),
            ("model_name", "llama2-70b"),
            ("ici_fsdp_parallelism", "1"),
            ("ici_autoregressive_parallelism", "1"),
            ("ici_tensor_parallelism", "-1"),
            ("scan_layers", "false"),
            ("weight_dtype", "bfloat16"),
            ("per_device_batch_size", "27"),
            ("checkpoint_is_quantized", "true"),
            ("quantization", "int8"),
            ("quantize_kvcache", "true"),
        ),
        modes={"interleaved": ModeSpec(probes=Probes(240, 100)), "disaggregated": DISAGGREGATED},
    ),
}


def mode_spec(preset: PathwaysPreset, mode: str) -> ModeSpec:
    return preset.modes.get(mode, ModeSpec())
