"""Issue 22 item 12: a stack file with an encrypted value, as `pulumi config set --secret tpu-serving:hfToken hf_...`
(README, examples/vllm-single-host) writes it, renders, tests and fuzzes offline.

The Pulumi CLI stores a secret in the stack file as `<key>: {secure: <ciphertext>}` and hands the program the
decrypted value with the key listed among the secret keys (PULUMI_CONFIG_SECRET_KEYS), so `Config.get_secret` /
`require_secret` give a secret Output. Offline nothing is decrypted: the value is a placeholder, still a secret.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tooling.harness.k8s_objects import SECRET, plain
from tooling.harness.offline import (
    ROOT,
    SECRET_PLACEHOLDER,
    config_values,
    load_stack_file,
    parse_stack_file,
    run_stack_file,
)
from tooling.review import render
from tooling.scans import fuzz

EXAMPLE = ROOT / "examples" / "vllm-single-host" / "Pulumi.vllm-single-host.yaml"
# the shape `pulumi config set --secret` writes with the passphrase provider (the ciphertext is never read)
CIPHERTEXT = "v1:8pLNbJj1yYI=:v1:pZ0iRmU3p1SxXz0x:QeqvVYdnbmAI2jJOCRtRw1UAlaOHtGZ6Qg=="


@pytest.fixture
def encrypted_stack(tmp_path) -> Path:
    """The vllm-single-host example (a gated model) with its hfToken set as the README says."""
    data = yaml.safe_load(EXAMPLE.read_text())
    data["config"]["tpu-serving:hfToken"] = {"secure": CIPHERTEXT}
    path = tmp_path / "Pulumi.encrypted.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_render_check_passes_and_shows_the_token_as_a_secret(encrypted_stack, tmp_path, capsys):
    out = tmp_path / "build"
    assert render.main(["--check", "--out", str(out), str(encrypted_stack)]) == 0, capsys.readouterr().err
    secret = yaml.safe_load((out / "encrypted" / "k8s" / "llama70b" / "Secret-llama70b-hf-token.yaml").read_text())
    assert secret["stringData"] == SECRET
    written = "\n".join(p.read_text() for p in out.rglob("*") if p.is_file())
    assert SECRET_PLACEHOLDER not in written and CIPHERTEXT not in written


def test_the_program_gets_the_token_as_a_secret(encrypted_stack):
    recording = run_stack_file(encrypted_stack, preview=True)
    secret = recording.one("kubernetes:core/v1:Secret", "workload-llama70b-hf-token")
    # a secret Output (masked), holding the placeholder offline
    assert plain(secret.inputs["stringData"], mask_secrets=True) == SECRET
    assert plain(secret.inputs["stringData"]) == {"hf_token": SECRET_PLACEHOLDER}
    # the config check sees the token as set as a secret: no "gated model without a token" warning, no refusal
    assert not [w for w in recording.warnings if "hfToken" in w]
    assert not [w for w in parse_stack_file(encrypted_stack).warnings if "hfToken" in w]


def test_the_fuzzer_mutates_a_stack_file_with_an_encrypted_value(encrypted_stack):
    config = load_stack_file(encrypted_stack)
    assert fuzz.classify(config, "encrypted", render=True) == ("valid", fuzz.RENDERED)
    # the ciphertext is one opaque leaf: replaced or deleted whole, never mutated inside
    paths = list(fuzz._paths(config))
    assert ("tpu-serving:hfToken",) in paths and ("tpu-serving:hfToken", "secure") not in paths
    summary = fuzz.run(40, 3, render=2, files=[encrypted_stack])
    assert not summary.findings(), [(r.outcome, r.mutations, r.detail[:300]) for r in summary.findings()]
    assert summary.rendered > 0


def test_a_token_in_plain_text_is_still_refused(tmp_path, capsys):
    data = yaml.safe_load(EXAMPLE.read_text())
    data["config"]["tpu-serving:hfToken"] = "hf_plain"
    path = tmp_path / "Pulumi.plain.yaml"
    path.write_text(yaml.safe_dump(data))
    assert render.main(["--out", str(tmp_path / "build"), str(path)]) == 1
    assert "tpu-serving:hfToken: is set in plain text" in capsys.readouterr().err


def test_a_secure_value_inside_a_structured_value_makes_its_key_secret():
    """The CLI marks a key secret when its object value holds a secure value anywhere."""
    values, secret = config_values(
        {
            "gcp:project": "p-123456",
            "tpu-serving:cluster": {"labels": {"team": {"secure": CIPHERTEXT}}},
            "tpu-serving:hfToken": {"secure": CIPHERTEXT},
        }
    )
    assert secret == ("tpu-serving:cluster", "tpu-serving:hfToken")
    assert values["tpu-serving:hfToken"] == SECRET_PLACEHOLDER
    assert yaml.safe_load(values["tpu-serving:cluster"]) == {"labels": {"team": SECRET_PLACEHOLDER}}
    assert values["gcp:project"] == "p-123456"
