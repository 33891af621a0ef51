"""The TPU catalog and sizing helper, tested directly against the facts in ../shared/reference/gke-tpu-facts.md."""

import pytest

from stacks.facts import catalog
from stacks.facts.catalog import CatalogError, slice_shape


@pytest.mark.parametrize(
    "tpu,topology,machine_type,hosts,chips_per_host,accelerator",
    [
        ("v5e", "1x1", "ct5lp-hightpu-1t", 1, 1, "tpu-v5-lite-podslice"),
        ("v5e", "2x2", "ct5lp-hightpu-4t", 1, 4, "tpu-v5-lite-podslice"),
        ("v5e", "2x4", "ct5lp-hightpu-8t", 1, 8, "tpu-v5-lite-podslice"),
        ("v5e", "4x8", "ct5lp-hightpu-4t", 8, 4, "tpu-v5-lite-podslice"),
        ("v5e", "16x16", "ct5lp-hightpu-4t", 64, 4, "tpu-v5-lite-podslice"),
        ("v6e", "1x1", "ct6e-standard-1t", 1, 1, "tpu-v6e-slice"),
        ("v6e", "2x4", "ct6e-standard-8t", 1, 8, "tpu-v6e-slice"),
        ("v6e", "4x4", "ct6e-standard-4t", 4, 4, "tpu-v6e-slice"),
        ("v6e", "4x8", "ct6e-standard-4t", 8, 4, "tpu-v6e-slice"),
        ("v6e", "8x16", "ct6e-standard-4t", 32, 4, "tpu-v6e-slice"),
        ("v4", "2x2x1", "ct4p-hightpu-4t", 1, 4, "tpu-v4-podslice"),
        ("v4", "2x2x4", "ct4p-hightpu-4t", 4, 4, "tpu-v4-podslice"),
        ("v5p", "2x2x1", "ct5p-hightpu-4t", 1, 4, "tpu-v5p-slice"),
        ("v5p", "4x4x8", "ct5p-hightpu-4t", 32, 4, "tpu-v5p-slice"),
        ("v5p", "16x16x24", "ct5p-hightpu-4t", 1536, 4, "tpu-v5p-slice"),
    ],
)
def test_default_shapes(tpu, topology, machine_type, hosts, chips_per_host, accelerator):
    shape = slice_shape(tpu, topology)
    assert shape.machine_type == machine_type
    assert shape.hosts == hosts
    assert shape.tpu_request == chips_per_host
    assert shape.multi_host == (hosts > 1)
    assert shape.node_selector == {
        "cloud.google.com/gke-tpu-accelerator": accelerator,
        "cloud.google.com/gke-tpu-topology": topology,
    }


def test_2x4_multi_host_variant_is_chosen_by_machine_type():
    shape = slice_shape("v6e", "2x4", "ct6e-standard-4t")
    assert (shape.hosts, shape.tpu_request, shape.multi_host) == (2, 4, True)
    shape = slice_shape("v5e", "2x4", "ct5lp-hightpu-4t")
    assert (shape.hosts, shape.tpu_request) == (2, 4)


def test_machine_type_must_fit_topology():
    with pytest.raises(CatalogError, match=r"ct6e-standard-1t.*does not fit v6e 4x4; allowed: ct6e-standard-4t"):
        slice_shape("v6e", "4x4", "ct6e-standard-1t")


def test_unknown_generation_and_topology_name_the_allowed_values():
    with pytest.raises(CatalogError, match=r"unknown TPU generation 'v7'; allowed: v4, v5e, v5p, v6e"):
        slice_shape("v7", "4x4")
    with pytest.raises(CatalogError, match=r"'4x5' is not valid for v6e; allowed: 1x1, 2x2, 2x4, 4x4"):
        slice_shape("v6e", "4x5")
    with pytest.raises(CatalogError, match="not of the form"):
        catalog.topology_chips("4by4")


def test_hbm_and_min_versions():
    assert catalog.generation("v5e").hbm_bytes_per_chip == 16 * 10**9
    assert catalog.generation("v6e").hbm_bytes_per_chip == 32 * 10**9
    assert catalog.generation("v5p").hbm_bytes_per_chip == 95 * 2**30
    assert slice_shape("v6e", "4x4").hbm_bytes == 16 * 32 * 10**9
    assert catalog.version_tuple(catalog.generation("v6e").min_gke_version) == (1, 31, 2, 1115000)
    assert catalog.version_tuple("1.30.5-gke.100") < catalog.version_tuple("1.31.2-gke.1115000")


def test_topologies_are_sorted_by_chips_and_unique():
    topos = catalog.topologies(catalog.generation("v6e"))
    assert topos == ["1x1", "2x2", "2x4", "4x4", "4x8", "8x8", "8x16", "16x16"]


# ---- sizing: the Saxml tutorial's rule, N-billion at 16 bits needs about 2N GB ------------------------


def test_175b_on_v5e_needs_22_chips_and_a_4x8():
    gen = catalog.generation("v5e")
    assert catalog.weight_bytes(175, 16) == 350 * 10**9
    assert catalog.chips_needed(175, 16, gen) == 22  # 21.875 -> "21+"
    shape = catalog.smallest_fitting_shape(175, 16, "v5e")
    assert shape.topology == "4x8" and shape.chips == 32


@pytest.mark.parametrize(
    "params,bits,tpu,topology",
    [
        (7, 16, "v5e", "1x1"),
        (8, 16, "v5e", "1x1"),
        (9, 16, "v5e", "2x2"),
        (70, 16, "v6e", "2x4"),
        (405, 8, "v6e", "4x4"),
        (405, 16, "v6e", "4x8"),
    ],
)
def test_smallest_fitting_topology(params, bits, tpu, topology):
    assert catalog.smallest_fitting_shape(params, bits, tpu).topology == topology


def test_nothing_fits_returns_none():
    assert catalog.smallest_fitting_shape(100_000, 16, "v5e") is None


def test_sizing_warning_names_numbers_and_suggestion():
    shape = slice_shape("v5e", "4x4")
    text = catalog.sizing_warning(175, 16, shape, "tpu-serving:workloads[0]")
    assert text.startswith("tpu-serving:workloads[0]: a 175B model at 16-bit needs about 350 GB")
    assert "4x4 slice has 256 GB" in text and "is 4x8 (32 chips)" in text
    assert catalog.sizing_warning(175, 16, slice_shape("v5e", "4x8"), "x") is None


# ---- every generation is complete; TPU7x (Ironwood) against its sources ------------------------------


@pytest.mark.parametrize("name", list(catalog.GENERATIONS))
def test_every_generation_is_complete(name):
    """Each entry carries every fact the program derives from it, consistently."""
    gen = catalog.generation(name)
    assert gen.name == name and gen.accelerator
    assert gen.hbm_bytes_per_chip >= 16 * 10**9
    assert len(catalog.version_tuple(gen.min_gke_version)) == 4  # 1.N.P-gke.B
    assert gen.placement in catalog.PLACEMENTS
    assert gen.list_price is not None or gen.price_note, "a generation without a price says why"
    if gen.list_price is not None:
        assert 0 < gen.list_price.spot < gen.list_price.on_demand
    assert gen.single_host and gen.multi_host_topologies
    for topology, machine_type in gen.single_host.items():
        # a single-host machine type holds the whole topology: '-<chips>t' (R2: machine type = <family>-<N>t)
        assert machine_type.endswith(f"-{catalog.topology_chips(topology)}t"), (topology, machine_type)
    assert gen.multi_host_machine_type.endswith(f"-{gen.multi_host_chips_per_vm}t")
    for topology in gen.multi_host_topologies:
        shape = catalog.slice_shape(name, topology, gen.multi_host_machine_type)
        assert shape.multi_host and shape.chips % gen.multi_host_chips_per_vm == 0, topology
    assert len(set(gen.multi_host_topologies)) == len(gen.multi_host_topologies)


def test_tpu7x_facts():
    gen = catalog.generation("tpu7x")
    # S7 (https://docs.cloud.google.com/kubernetes-engine/docs/concepts/tpu-ironwood): Standard 1.34.0-gke.2201000+
    assert gen.min_gke_version == "1.34.0-gke.2201000"
    # xpk@367c838 src/xpk/core/system_characteristics.py: gke_accelerator, machine types (pathways_tpu_version:
    # tests/test_workload_generations.py)
    assert gen.accelerator == "tpu7x"
    assert gen.single_host == {"1x1x1": "tpu7x-standard-1t", "2x2x1": "tpu7x-standard-4t"}
    assert gen.multi_host_machine_type == "tpu7x-standard-4t" and gen.multi_host_chips_per_vm == 4
    assert gen.hbm_bytes_per_chip == 192 * 2**30  # S6 https://docs.cloud.google.com/tpu/docs/tpu7x
    assert gen.placement == catalog.WORKLOAD_POLICY
    assert gen.list_price is None and "account team" in gen.price_note
    # xpk generate_tpu_topologies(max_cubes=144): 2x2x1 .. 2x4x4 plus AxBxC (multiples of 4, A<=B<=C) <= 144 cubes
    topos = catalog.topologies(gen)
    assert topos[:6] == ["1x1x1", "2x2x1", "2x2x2", "2x2x4", "2x4x4", "4x4x4"]
    assert len(topos) == 433  # xpk's 432 plus 1x1x1 on tpu7x-standard-1t
    assert "12x12x16" in topos and "4x8x4" not in topos and "24x24x24" not in topos  # 216 cubes > 144


@pytest.mark.parametrize(
    "topology,machine_type,hosts,chips_per_host,workload_policy",
    [
        ("1x1x1", "tpu7x-standard-1t", 1, 1, False),
        ("2x2x1", "tpu7x-standard-4t", 1, 4, False),  # xpk #825: one VM, no workload policy
        ("2x2x2", "tpu7x-standard-4t", 2, 4, True),
        ("4x4x4", "tpu7x-standard-4t", 16, 4, True),
        ("8x8x8", "tpu7x-standard-4t", 128, 4, True),
    ],
)
def test_tpu7x_shapes(topology, machine_type, hosts, chips_per_host, workload_policy):
    shape = slice_shape("tpu7x", topology)
    assert (shape.machine_type, shape.hosts, shape.tpu_request) == (machine_type, hosts, chips_per_host)
    assert shape.uses_workload_policy is workload_policy
    assert shape.node_selector == {
        "cloud.google.com/gke-tpu-accelerator": "tpu7x",
        "cloud.google.com/gke-tpu-topology": topology,
    }
    assert not slice_shape("v6e", "4x4").uses_workload_policy


def test_long_topology_lists_are_cut_in_messages():
    with pytest.raises(
        CatalogError, match=r"not valid for tpu7x; allowed: 1x1x1, 2x2x1, .*\(433 in all; see docs/configuration.md"
    ):
        slice_shape("tpu7x", "4x4")
