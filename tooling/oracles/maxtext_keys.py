"""The MaxText config keys the pinned single-host JetStream server accepts, extracted from MaxText's base config at
the tag its image is built from, into workloads/jetstream/maxtext_keys.json (the `jetstream` workload's `maxtext`
keys are checked against it: workloads/jetstream/plan.py).

    python -m tooling.oracles.maxtext_keys --repo <git dir of AI-Hypercomputer/maxtext>          # rewrite the file
    python -m tooling.oracles.maxtext_keys --repo <git dir> --check                               # exit 1 if it differs

The image: stacks/facts/versions.py IMAGE_RECORDS["maxengineServer"], built by ai-on-gke's maxengine-server Dockerfile from
maxtext@jetstream-v0.2.2 (the matrix's comment there). MaxText refuses a key its base config does not have:
AI-Hypercomputer/maxtext@jetstream-v0.2.2:MaxText/pyconfig.py _update_from_env_and_command_line raises "Key {k} was
passed at the command line but isn't in config." The server runs with that base config (no config file argument:
stacks/serving/maxtext.py render), so its keys are MaxText/configs/base.yml's.

jetstream-pathways has no such list: its image (jetstream-pathways:v0.2.0) names no MaxText tag or commit in any
source the matrix cites, so the keys it accepts are unknown here.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import yaml

from stacks.facts.versions import IMAGE_RECORDS
from tooling.harness.offline import ROOT

DATA = ROOT / "workloads" / "jetstream" / "maxtext_keys.json"
REPO = "AI-Hypercomputer/maxtext"
TAG = "jetstream-v0.2.2"
BASE = "MaxText/configs/base.yml"


def extract(git_dir: Path) -> dict:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "--git-dir", str(git_dir), *args], capture_output=True, text=True, check=True
        ).stdout

    keys = yaml.safe_load(git("show", f"{TAG}:{BASE}"))
    return {
        "source": f"{REPO}@{TAG}:{BASE}",
        "commit": git("rev-parse", f"{TAG}^{{commit}}").strip(),
        "image": IMAGE_RECORDS["maxengineServer"].ref,
        "refusedBy": f"{REPO}@{TAG}:MaxText/pyconfig.py _update_from_env_and_command_line",
        "extractedBy": "python -m tooling.oracles.maxtext_keys",
        "keys": sorted(keys),
    }


def render(data: dict) -> str:
    return json.dumps(data, indent=1) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", type=Path, required=True, help="git dir of a clone of AI-Hypercomputer/maxtext")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    text = render(extract(args.repo))
    if args.check:
        return 0 if DATA.read_text() == text else 1
    DATA.write_text(text)
    print(f"wrote {DATA.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
