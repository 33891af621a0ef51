"""Review of issue 23's first fixes: strict mode a valid stack can pass (cost notes, acknowledged zones), the
catalog's zone lists with their single-tenant rows, a prod-name guard that is not fooled by case or digits, and a
YAML error that points at the line where the unclosed bracket opens."""

from __future__ import annotations

import pytest

from stacks.config import ConfigError, named_environment
from tests.conftest import make_config
from tooling import example, fuzz, render
from tooling.offline import ROOT, StackFileError, load_stack_file, read_stack_yaml


def parse(raw_config: dict, *, stack: str = "dev"):
    return fuzz.parse(raw_config, stack)


# ---- 3. the prod-name guard: any case, any separator, digits, prod at either end of a word --------------------


@pytest.mark.parametrize(
    ("name", "named"),
    [
        ("Prod", "prod"),
        ("PROD", "prod"),
        ("prod1", "prod"),
        ("eu2prod", "prod"),
        ("myprod", "prod"),
        ("prodeu", "prod"),
        ("acme prod", "prod"),
        ("acme+Production", "prod"),
        ("Staging2", "staging"),
        ("preprod", "staging"),
        ("stagingeu", "staging"),
        # not environment names: English words that start with "prod", and names that say nothing
        ("product", None),
        ("producer", None),
        ("product-demo", None),
        ("production-like-demo", "prod"),
        ("reproduce", None),
        ("llama", None),
        ("backstage", None),
    ],
)
def test_named_environment_reads_letters_in_any_case(name, named):
    assert named_environment(name) == named


@pytest.mark.parametrize("stack", ["Prod", "prod1", "myprod", "PROD-eu"])
def test_dev_under_a_prod_stack_name_in_any_spelling_is_refused(stack):
    with pytest.raises(ConfigError, match=rf"with stack '{stack}', which is named like prod"):
        parse(make_config(tpu_serving__environment="dev"), stack=stack)


@pytest.mark.parametrize("stack", ["product", "producer-demo"])
def test_words_that_merely_start_with_prod_are_not_prod(stack):
    assert parse(make_config(tpu_serving__environment="dev"), stack=stack).environment == "dev"


@pytest.mark.parametrize(("stack", "expected"), [("Prod", "prod"), ("prod1", "prod"), ("Staging", "staging")])
def test_make_example_follows_a_capitalised_or_numbered_stack_name(monkeypatch, tmp_path, capsys, stack, expected):
    monkeypatch.setattr(example, "ROOT", tmp_path)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    assert example.main(["vllm-single-host", stack, "--project", "acme-ml-serving"]) == 0, capsys.readouterr()
    assert load_stack_file(tmp_path / f"Pulumi.{stack}.yaml")["tpu-serving:environment"] == expected


# ---- 4. a YAML error inside a bracket opened earlier names the line that opens it ----------------------------

UNCLOSED = "config:\n  gcp:project: a\n  tpu-serving:tpuPools: [a, b\n  gcp:region: x\n"


def test_an_unclosed_bracket_names_the_line_that_opens_it(tmp_path, capsys):
    path = tmp_path / "Pulumi.broken.yaml"
    path.write_text(UNCLOSED)
    with pytest.raises(StackFileError) as err:
        read_stack_yaml(path)
    message = str(err.value)
    # PyYAML: problem_mark line 4 column 13 (the ':' it stumbles on), context_mark line 3 column 25 (the '[')
    assert message.startswith(f"{path}:4:13: not valid YAML: ") and "(opened at line 3, column 25)" in message
    assert "    line 3:   tpu-serving:tpuPools: [a, b\n" in message, "the line holding the mistake is shown"
    assert "check the indentation and quoting on this line" not in message
    assert "a '[' is opened and not closed with ']': see line 3, where it opens" in message
    assert render.main([str(path), "--out", str(tmp_path / "build")]) == 1
    assert "(opened at line 3, column 25)" in capsys.readouterr().err


def test_an_error_opened_where_it_is_found_shows_one_line(tmp_path):
    path = tmp_path / "Pulumi.indent.yaml"
    path.write_text("config:\n  gcp:project: a\n   gcp:region: x\n")
    with pytest.raises(StackFileError) as err:
        read_stack_yaml(path)
    assert "opened at" not in str(err.value) and str(err.value).count("^") == 1
