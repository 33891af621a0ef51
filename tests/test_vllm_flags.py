"""A workload's `args` are flags the pinned `vllm serve` accepts (issue 34 item 18: a typo passed silently and vLLM
exited at start). The flag list is vLLM's own, extracted from its argument parser at the pinned tag
(tooling/oracles/vllm_flags.py -> workloads/vllm/serve_flags.json, which records vllm-project/vllm@<tag>, the functions read
and the wheel's sha256)."""

from __future__ import annotations

import re

import pytest

from stacks.problems import ConfigError
from tests.conftest import STACK_FILES
from tooling.harness.offline import load_stack_file
from tooling.oracles import vllm_flags
from tooling.scans import fuzz
from workloads.vllm import flags
from workloads.vllm.checks import RESERVED_ARGS

CONFIG = {
    "gcp:project": "tpu-test-project",
    "gcp:region": "us-central1",
    "tpu-serving:environment": "dev",
    "tpu-serving:tpuPools": [{"name": "p", "tpu": "v5e", "topology": "2x4", "zone": "us-central1-a"}],
}


def _parse(args, **fields):
    workload = {"type": "vllm", "name": "q", "pool": "p", "model": "Qwen/Qwen3-8B", "gated": False, "args": args}
    return fuzz.parse({**CONFIG, "tpu-serving:workloads": [{**workload, **fields}]}, "dev")


def test_the_flag_list_is_of_the_pinned_vllm():
    data = flags.serve_flags()
    version = vllm_flags.pinned_version()
    assert data["version"] == version and data["source"] == f"vllm-project/vllm@v{version}", (
        "the matrix pins another vLLM: python -m tooling.oracles.vllm_flags --download"
    )
    assert data["extractedFrom"].startswith(f"PyPI vllm-{version}-") and " sha256 " in data["extractedFrom"]
    assert len(data["flags"]) > 200 and set(data["flags"].values()) <= {"boolean", "switch", "optional", "value"}


def test_the_committed_list_is_what_the_extraction_gives():
    wheels = sorted(vllm_flags.CACHE.glob(f"vllm-{vllm_flags.pinned_version()}-*.whl"))
    if not wheels:
        pytest.skip(f"no vllm wheel in {vllm_flags.CACHE}: python -m tooling.oracles.vllm_flags --download fetches it")
    assert vllm_flags.render(vllm_flags.extract(wheels[0])) == flags.DATA.read_text()


def test_every_flag_the_stack_derives_is_one_vllm_has():
    """The stack's own flags (the derived ones, and those it reserves) are in vLLM's list, so the list and the
    stack agree on what `vllm serve` reads."""
    derived = set(RESERVED_ARGS)
    for path in STACK_FILES:
        config = load_stack_file(path)
        for plan in fuzz.parse(config, "s").workloads:
            if plan.workload.type == "vllm":
                derived |= {a.split("=", 1)[0].removeprefix("--").removeprefix("no-") for a in plan.serve_args()}
    assert {"host", "port", "model", "tensor-parallel-size", "load-format"} <= derived
    assert sorted(d for d in derived if d not in flags.serve_flags()["flags"]) == []


def test_a_misspelt_flag_is_refused_with_its_key_path_and_close_matches():
    with pytest.raises(ConfigError) as err:
        _parse({"max-num-seq": 128, "enable_prefix_cachng": True, "max-num-batched-tokens": 512})
    text = str(err.value)
    assert (
        "tpu-serving:workloads[0].args.max-num-seq: --max-num-seq is not a `vllm serve` flag of vLLM 0.32.0 "
        "(vllm-project/vllm@v0.32.0, the pinned image); close matches: --max-num-seqs" in text
    )
    assert "args.enable_prefix_cachng: --enable-prefix-cachng is not" in text and "--enable-prefix-caching" in text
    assert "max-num-batched-tokens" not in text


@pytest.mark.parametrize(
    "args,fragment",
    [
        ({"max-num-seqs": False}, "false renders --no-max-num-seqs, which vLLM 0.32.0"),
        ({"headless": False}, "false renders --no-headless"),
        ({"max-num-seqs": True}, "true renders a bare --max-num-seqs, which takes a value"),
        ({"enforce-eager": 1}, "1 is not allowed: --enforce-eager takes no value"),
    ],
)
def test_a_value_the_flag_does_not_take_is_refused(args, fragment):
    with pytest.raises(ConfigError, match=fragment.replace(".", r"\.")):
        _parse(args)


def test_what_vllm_accepts_passes_and_an_image_of_another_version_is_not_held_to_the_list():
    cfg = _parse({"enforce-eager": True, "enable-prefix-caching": False, "max_num_seqs": 64, "disable-log-stats": True})
    assert "--no-enable-prefix-caching" in cfg.workloads[0].serve_args()
    assert _parse({"max-num-seq": 1}, image="docker.io/vllm/vllm-tpu:nightly").workloads


def test_the_no_form_of_a_boolean_optional_flag_is_accepted_and_only_that():
    """vLLM registers its true/false flags with argparse.BooleanOptionalAction, which adds `--no-<flag>` (CPython
    Lib/argparse.py BooleanOptionalAction.__init__): `no-enable-prefix-caching: true` renders exactly what vLLM
    accepts. A `no-` form of a store_true switch, of a flag taking a value, or of a misspelt one is refused, and so is
    `no-<flag>: false` (it would render --no-no-<flag>)."""
    recorded = flags.serve_flags()["flags"]  # extracted from vLLM's parser at the pinned tag
    assert recorded["enable-prefix-caching"] == "boolean" and recorded["headless"] == "switch"
    cfg = _parse({"no-enable-prefix-caching": True, "no_enable_chunked_prefill": None})
    args = cfg.workloads[0].serve_args()
    assert "--no-enable-prefix-caching" in args and not [a for a in args if "chunked" in a]
    for flag, kind in recorded.items():  # every boolean flag's no- form passes the check, no other flag's does
        assert (flags.arg_problem(f"no-{flag}", True) is None) == (kind == "boolean"), flag
    for bad, fragment in [
        ({"no-headless": True}, "--headless has no --no-headless form"),
        ({"no-max-num-seqs": True}, "--max-num-seqs has no --no-max-num-seqs form"),
        ({"no-enable-prefix-cachng": True}, "close matches: --enable-prefix-caching"),
        ({"no-enable-prefix-caching": False}, "false renders --no-no-enable-prefix-caching"),
        ({"no-enable-prefix-caching": 1}, "1 is not allowed: --no-enable-prefix-caching takes no value"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(fragment)):
            _parse(bad)


# ---- the same for JetStream's MaxText keys ------------------------------------------------------------------


# A git dir of AI-Hypercomputer/maxtext holding the tag, to compare the committed keys with a fresh extraction.
MAXTEXT_GIT = "TPU_SERVING_MAXTEXT_GIT"


def test_maxtext_keys_are_of_the_pinned_server_and_a_misspelt_one_is_refused():
    import os
    from pathlib import Path

    from stacks.facts.versions import IMAGE_RECORDS
    from tooling.oracles import maxtext_keys
    from workloads.jetstream.maxtext_keys import maxtext_keys as keys

    data = keys()
    assert data["source"] == "AI-Hypercomputer/maxtext@jetstream-v0.2.2:MaxText/configs/base.yml"
    assert data["image"] == IMAGE_RECORDS["maxengineServer"].ref, "the matrix pins another server: re-extract"
    repo = os.environ.get(MAXTEXT_GIT)
    if repo:  # without a clone the committed keys stand as extracted (their commit is recorded)
        assert maxtext_keys.render(maxtext_keys.extract(Path(repo))) == maxtext_keys.DATA.read_text()
    config = {
        **CONFIG,
        "tpu-serving:workloads": [
            {
                "type": "jetstream",
                "name": "g",
                "pool": "p",
                "model": "gemma-7b",
                "checkpoint": "gs://c/gemma",
                "maxtext": {"per_device_batch_size": 4, "max_prefil_predict_length": 512},
            }
        ],
    }
    with pytest.raises(ConfigError) as err:
        fuzz.parse(config, "dev")
    assert (
        "tpu-serving:workloads[0].maxtext.max_prefil_predict_length: max_prefil_predict_length is not a MaxText config "
        "key of the pinned server (AI-Hypercomputer/maxtext@jetstream-v0.2.2:MaxText/configs/base.yml)"
    ) in str(err.value) and "close matches: max_prefill_predict_length" in str(err.value)
    assert "per_device_batch_size" not in str(err.value)


def test_every_maxtext_key_the_stack_passes_is_one_maxtext_has():
    from workloads.jetstream.maxtext_keys import maxtext_keys as keys

    passed = {
        k
        for path in STACK_FILES
        for plan in fuzz.parse(load_stack_file(path), "s").workloads
        if plan.workload.type == "jetstream"
        for k, _ in plan.maxtext_pairs()
    }
    assert "load_parameters_path" in passed and sorted(passed - set(keys()["keys"])) == []
