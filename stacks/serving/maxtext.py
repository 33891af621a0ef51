"""MaxText command-line arguments: `<config.yml> key=value ...`, preset first, user overrides in place."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import prod

# MaxText's ICI (within-slice) mesh axes and their base.yml defaults: fsdp takes "the rest" (-1) unless set.
ICI_DEFAULTS: dict[str, int] = {
    "ici_data_parallelism": 1,
    "ici_fsdp_parallelism": -1,
    "ici_fsdp_transpose_parallelism": 1,
    "ici_sequence_parallelism": 1,
    "ici_context_parallelism": 1,
    "ici_context_autoregressive_parallelism": 1,
    "ici_tensor_parallelism": 1,
    "ici_tensor_transpose_parallelism": 1,
    "ici_tensor_sequence_parallelism": 1,
    "ici_autoregressive_parallelism": 1,
    "ici_expert_parallelism": 1,
    "ici_pipeline_parallelism": 1,
}

# MaxText arguments the stack derives from a workload's own keys (its `checkpoint` and metrics port), so a preset
# leaves them empty and a `maxtext` override of them is refused.
CHECKPOINT_ARG = "load_parameters_path"
METRICS_ARG = "prometheus_port"

Scalar = str | int | float | bool


def fmt(value: Scalar) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def merge(preset: Sequence[tuple[str, str]], overrides: Mapping[str, Scalar]) -> list[tuple[str, str]]:
    """Preset pairs with overridden values kept in place; new keys appended in the order given."""
    out = [(k, fmt(overrides[k]) if k in overrides else v) for k, v in preset]
    known = {k for k, _ in preset}
    out.extend((k, fmt(v)) for k, v in overrides.items() if k not in known)
    return out


def render(config_file: str | None, pairs: Sequence[tuple[str, str]]) -> list[str]:
    """`config_file key=value ...`; without a config file the server image supplies its own base config."""
    head = [config_file] if config_file else []
    return [*head, *(f"{k}={v}" for k, v in pairs)]


def weight_bits(pairs: Sequence[tuple[str, str]]) -> int:
    """Bits per served weight from the MaxText `quantization` argument (none: bfloat16)."""
    quantization = dict(pairs).get("quantization", "")
    return {"int8": 8, "int4": 4, "fp8": 8}.get(quantization, 16)


def parallelism_problem(pairs: Sequence[tuple[str, str]], chips: int) -> str | None:
    """Why the ICI mesh does not fit `chips`, or None. One axis may be -1, meaning "the rest"."""
    values = dict(ICI_DEFAULTS)
    for key, value in pairs:
        if key in ICI_DEFAULTS:
            try:
                values[key] = int(value)
            except ValueError:
                return f"{key}={value} is not an integer"
    bad = [k for k, v in values.items() if v == 0 or v < -1]
    if bad:
        return f"{bad[0]}={values[bad[0]]}: each axis is a positive integer or -1"
    rest = [k for k, v in values.items() if v == -1]
    fixed = prod(v for v in values.values() if v != -1)
    shown = ", ".join(f"{k}={v}" for k, v in values.items() if v != 1)
    if len(rest) > 1:
        return f"only one ICI axis may be -1, got {', '.join(rest)}"
    if rest and chips % fixed:
        return f"the fixed ICI axes ({shown}) multiply to {fixed}, which does not divide the slice's {chips} chips"
    if not rest and fixed != chips:
        return f"the ICI axes ({shown}) multiply to {fixed}, but the slice has {chips} chips"
    return None


# MaxText's persistent compile cache: pyconfig sets JAX's cache directory from `jax_cache_dir` (its base.yml default
# "~/jax_cache", local to the container) before anything compiles (AI-Hypercomputer/maxtext MaxText/pyconfig.py:
# `if raw_keys["jax_cache_dir"]: compilation_cache.set_cache_dir(os.path.expanduser(raw_keys["jax_cache_dir"]))`),
# and JAX reads and writes a gs:// cache directory itself (jax-ml/jax docs/persistent_compilation_cache.md, its
# section on Google Cloud), so the stack points it at the workload's prefix of the stack bucket; the single JAX process of a
# JetStream replica is its only writer.
CACHE_ARG = "jax_cache_dir"
