"""The JSON Schema of stack files: current with the models, accepts every shipped stack, rejects mistakes."""

import json

import jsonschema
import pytest
import yaml

from tests.conftest import FLEET_FILES, STACK_FILES
from tooling.generate import json_schema


@pytest.fixture(scope="module")
def validator():
    return jsonschema.Draft202012Validator(json.loads(json_schema.SCHEMA_PATH.read_text()))


def test_committed_schema_is_current():
    assert json_schema.SCHEMA_PATH.read_text() == json_schema.render_schema(), "run `make schema`"
    assert json_schema.main(["--check"]) == 0


@pytest.mark.parametrize("path", [*STACK_FILES, *FLEET_FILES], ids=lambda p: p.name)
def test_shipped_stack_files_validate(validator, path):
    assert list(validator.iter_errors(yaml.safe_load(path.read_text()))) == []
    text = path.read_text()
    assert text.startswith("# yaml-language-server: $schema=")  # editors pick the schema up


@pytest.mark.parametrize(
    "config,fragment",
    [
        ({"tpu-serving:tpuPool": []}, "False schema"),
        ({"tpu-serving:cluster": {"releaseChanel": "RAPID"}}, "releaseChanel"),
        ({"tpu-serving:environment": "qa"}, "'qa' is not one of"),
        ({"tpu-serving:paused": 1}, "1 is not valid under any of the given schemas"),
        ({"tpu-serving:fleet": {"regions": []}}, "[] is too short"),
        ({"tpu-serving:fleet": {"regions": [{"stack": "a"}, {"stack": "b"}]}}, "False schema"),
        ({"tpu-serving:workloads": [{"type": "saxml", "name": "x"}]}, "is not valid under any of the given schemas"),
        (
            {
                "tpu-serving:tpuPools": [
                    {"name": "p", "tpu": "v6e", "topology": "4x4", "zone": "z", "capacity": "cheap"}
                ]
            },
            "'cheap'",
        ),
    ],
)
def test_mistakes_are_rejected(validator, config, fragment):
    doc = {"config": {"gcp:project": "my-project", "gcp:region": "r", "tpu-serving:environment": "dev", **config}}
    messages = [e.message for e in validator.iter_errors(doc)]
    assert any(fragment in m for m in messages), messages
