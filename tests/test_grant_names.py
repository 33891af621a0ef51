"""Bucket grants are named by the binding they make, the same in every workload type, and a stack made before keeps
every one of them (issue 36 #2).

A bucket IAM member is the binding, not the Pulumi resource: google-beta's ID is
`<bucket>/<role>/<member>[/<condition title>/<description>/<expression>]` and its delete takes that member out of the
binding of that role and condition, whichever resource created it (hashicorp/terraform-provider-google-beta@v7.45.0,
the provider pulumi-gcp 10.2.0 bridges (tooling/oracles/provider_schema.py): google-beta/tpgiamresource/
resource_iam_member.go resourceIamMemberCreate `d.SetId(... + "/" + memberBind.Role + "/" + member)` and
resourceIamMemberDelete `subtractFromBindings(ep.Bindings, memberBind)`; iam.go subtractFromBindings and
createIamBindingsMap key bindings by `iamBindingKey{b.Role, conditionKeyFromCondition(b.Condition)}`). So when a type
swap named the same binding differently (JetStream `checkpoint`, vLLM `weights`), Pulumi created the new resource (the
binding was there: no change) and deleted the old one at the end (pulumi/pulumi pkg/resource/deploy: deletes last),
which revoked the new server's access.
"""

from __future__ import annotations

import json
from pathlib import Path

from stacks.security.bucket_access import OBJECT_USER, OBJECT_VIEWER, Grant, binding_suffix
from tests.conftest import EXAMPLES, recorded
from tooling.harness.offline import Recording, Registration
from tooling.review import transition
from tooling.review.render import stack_name

MEMBER = "gcp:storage/bucketIAMMember:BucketIAMMember"
BEFORE = Path(__file__).parent / "data" / "grants_before_binding_names.json"


def test_the_name_is_the_binding_whatever_the_grant_is_for():
    stack = "stack-bucket"
    checkpoint = Grant("checkpoint", "weights", OBJECT_VIEWER, "llama/")
    weights = Grant("weights", "weights", OBJECT_VIEWER, "llama/")
    assert binding_suffix(checkpoint, stack) == binding_suffix(weights, stack)
    others = [
        Grant("x", "weights", OBJECT_USER, "llama/"),  # another role
        Grant("x", "weights", OBJECT_VIEWER, "llama2/"),  # another prefix
        Grant("x", "weights", OBJECT_VIEWER, "llama-/"),  # the same slug, another prefix
        Grant("x", "weights2", OBJECT_VIEWER, "llama/"),  # another bucket
        Grant("x", "weights", OBJECT_VIEWER, None),  # the whole bucket
        Grant("x", stack, OBJECT_VIEWER, "llama/"),  # the stack bucket's prefix
    ]
    names = {binding_suffix(g, stack) for g in [checkpoint, *others]}
    assert len(names) == len(others) + 1


def _before(name: str) -> Recording:
    data = json.loads(BEFORE.read_text())["examples"][name]
    return Recording([Registration(MEMBER, r["name"], r["urn"], True, r["inputs"], parent=r["parent"]) for r in data])


def _binding(reg: Registration) -> tuple[str, ...]:
    inputs = reg.inputs
    title = (inputs.get("condition") or {}).get("title") or inputs.get("conditionTitle") or ""
    return (str(inputs["bucket"]), str(inputs["role"]), str(inputs["member"]), title)


def test_a_stack_made_before_keeps_every_grant():
    """Every example's grants as main@c83554d registered them (tests/data/grants_before_binding_names.json): each is
    matched, by its URN or an alias (a new name; a grant the workload component registered itself, now its identity's,
    by its old parent too), to a grant of the same binding, and no grant is new: the preview of an unchanged stack
    shows no grant created or deleted."""
    names = json.loads(BEFORE.read_text())["examples"]
    paths = [p for p in EXAMPLES if stack_name(p) in names]
    assert {stack_name(p) for p in paths} == set(names), "every example recorded is still an example"
    renamed = 0
    for path in paths:
        old = _before(stack_name(path))
        new = recorded(path, False)
        related = transition.matched(old, new)
        assert set(related) == {r.urn for r in old.resources}, path.name
        unmatched = {r.name for r in new.of_type(MEMBER)} - {r.name for r in related.values()}
        # a grant not matched belongs to a workload added to the example after the recording (a new identity)
        old_workloads = {r.name.split("-identity-")[0] for r in old.resources if "-identity-" in r.name}
        assert all("-identity-" in name and name.split("-identity-")[0] not in old_workloads for name in unmatched), (
            path.name,
            sorted(unmatched),
        )
        for before in old.resources:
            after = related[before.urn]
            assert _binding(before) == _binding(after), (path.name, before.name, after.name)
            renamed += before.urn != after.urn
    assert renamed > 20  # the test reads renamed grants (not only unchanged ones)


def test_a_grant_the_component_registered_itself_is_aliased_to_its_old_parent():
    """A JetStream+Pathways checkpoint in another bucket (its whole-bucket grant and storage.buckets.get there) and a
    PathwaysJob's node grants were registered by the workload component, not under an identity: their aliases name
    the component as parent, under its current type and each type token it had."""
    (path,) = [p for p in EXAMPLES if stack_name(p) == "all-in-one"]
    rec = recorded(path, False)
    moved = [r for r in rec.of_type(MEMBER) if any("parentUrn" in a for a in r.aliases)]
    names = {a["name"] for r in moved for a in r.aliases}
    assert {"workload-llama2-70b-checkpoint-reader", "workload-pw-prefix-objectuser", "workload-pw-bucket-get"} <= names
    for reg in moved:
        parents = {a["parentUrn"].split("::")[2].rsplit("$", 1)[-1] for a in reg.aliases if "parentUrn" in a}
        assert {"tpu-serving:workloads:Serving", "tpu-serving:workloads:JetStreamPathways"} <= parents, reg.name
