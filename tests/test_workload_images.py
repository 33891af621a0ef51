"""Each workload type names its default images once (its module's DEFAULT_IMAGES / TPU_IMAGES); the config's
`images.*` keys, the TPU generations a type serves and the version matrix are checked against that."""

from __future__ import annotations

import pytest

from stacks import workload_checks
from stacks.facts import versions
from stacks.serving import maxtext
from workloads.jetstream import plan as jetstream
from workloads.jetstream_pathways import plan as jetstream_pathways
from workloads.registry import WORKLOAD_TYPES
from workloads.saxml import plan as saxml

WITH_IMAGE_MAPS = {"jetstream": jetstream, "jetstream-pathways": jetstream_pathways, "saxml": saxml}


def test_every_workload_type_says_which_default_images_run_on_its_tpus():
    for workload_type, kind in WORKLOAD_TYPES.items():
        keys = kind.tpu_images
        assert keys, workload_type
        assert set(keys) <= set(versions.IMAGE_RECORDS), workload_type


@pytest.mark.parametrize("workload_type", sorted(WITH_IMAGE_MAPS))
def test_every_images_key_has_one_pinned_default(workload_type):
    module = WITH_IMAGE_MAPS[workload_type]
    images_model = WORKLOAD_TYPES[workload_type].config.model_fields["images"].annotation
    assert set(module.DEFAULT_IMAGES) == set(images_model.model_fields)
    assert set(module.DEFAULT_IMAGES.values()) <= set(versions.IMAGES)
    assert set(module.TPU_IMAGES) <= set(module.DEFAULT_IMAGES.values())


def test_generations_served_follow_the_tpu_images():
    # JetStream's MaxEngine image is recorded for v4, v5e, v5p only (stacks/facts/versions.py, with its source).
    assert (
        workload_checks.generations_served(WORKLOAD_TYPES["jetstream"])
        == versions.IMAGE_RECORDS["maxengineServer"].serves.tpus
    )
    assert "tpu7x" in workload_checks.generations_served(
        WORKLOAD_TYPES["vllm"]
    ) and "tpu7x" not in workload_checks.generations_served(WORKLOAD_TYPES["saxml"])


# MaxText's `quantization` values: AI-Hypercomputer/maxtext MaxText/layers/quantizations.py `_get_quant_config`
# ("" none: weights as weight_dtype, bfloat16 in every preset; "int8" and "fp8" 8-bit).
@pytest.mark.parametrize(("overrides", "bits"), [({}, 16), ({"quantization": "int8"}, 8), ({"quantization": "fp8"}, 8)])
def test_weight_bits_follow_the_served_quantization(overrides, bits):
    preset = jetstream.PRESETS["gemma-7b"].args()
    assert maxtext.weight_bits(maxtext.merge(preset, overrides)) == bits


def test_pathways_presets_size_from_their_quantization_argument():
    # The reference presets serve int8 (kubernetes-engine-samples ai-ml/llm-serving-tpus-jetstream/pathways).
    for preset in jetstream_pathways.PRESETS.values():
        assert maxtext.weight_bits(preset.args) == 8


def test_sax_cell_defaults_to_one_named_after_the_workload():
    model = WORKLOAD_TYPES["saxml"].config
    assert saxml.cell_of(model.model_validate({"type": "saxml", "name": "sax", "pool": "p"})) == "/sax/sax"
    assert (
        saxml.cell_of(model.model_validate({"type": "saxml", "name": "sax", "pool": "p", "cell": "/sax/x"})) == "/sax/x"
    )
