"""LoRA adapters of a vLLM workload (issue 38 #2): where each comes from, where the server reads it, the flags that
serve them, and the rules (the TPU generation's support matrix and the engine release table).

- Flags (vllm 0.27.0, all in workloads/vllm/serve_flags.json, the oracle of the pinned parser): --enable-lora;
  --lora-modules, a list (nargs "+", vllm/entrypoints/openai/cli_args.py FrontendArgs.lora_modules and
  LoRAParserAction: `name=path` items, one argument each); --max-loras (vllm/config/lora.py LoRAConfig.max_loras,
  adapters in one batch, >= 1); --max-lora-rank (MaxLoRARanks: 1, 8, 16, 32, 64, 128, 256, 320, 512).
- Paths: vLLM loads an adapter from a local directory (or the Hub, which the server never calls: HF_HUB_OFFLINE=1),
  so each adapter is copied from gs:// to the pod's disk before the server starts (LORA_PULL_SCRIPT), like the
  compile cache; a Hugging Face adapter is staged into the stack bucket first by the weights' staging Job.
- Runtime loading: vllm 0.27.0 serves /v1/load_lora_adapter only with VLLM_ALLOW_RUNTIME_LORA_UPDATING
  (vllm/entrypoints/serve/lora/api_router.py attach_router, vllm/envs.py), and logs that it "should ONLY be used for
  local development": the endpoint has no authentication and would sit behind the stack's gateway. The stack does
  not turn it on: an adapter added to `loras` rolls the replicas (a surge replica where the pool has room).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from stacks.facts import releases
from stacks.problems import Problem

LOCAL_FILES_DIR = "/model-files"  # a local emptyDir: what the server reads beside the streamed weights
LORA_DIR = f"{LOCAL_FILES_DIR}/lora"  # one directory per adapter, by its index in `loras`
DRAFT_DIR = f"{LOCAL_FILES_DIR}/draft"  # the speculative draft model
HF_SOURCE_RE = re.compile(
    r"(?P<repo>[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*)@(?P<rev>[A-Za-z0-9][A-Za-z0-9._-]{0,99})"
)
GS_SOURCE_RE = re.compile(r"gs://[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]/\S+")

# What tpu-inference's release support matrices record per TPU generation, for the features the typed options turn
# on (vllm-project/tpu-inference@v0.27.0:support_matrices/release/<v6e|v7x>/vllm/feature_support_matrix.csv, column
# CorrectnessTest; the vLLM model path the stack serves). Only v6e and v7x (catalog tpu7x) have release matrices: on
# another generation the feature is untested at the pinned release. Release covered: v0.27.0, the last tag with
# release matrices; the pinned engine, tpu-inference 0.32.0, ships none in its wheel or sdist (stacks/facts/versions.py).
SUPPORT_MATRIX = "vllm-project/tpu-inference@v0.27.0:support_matrices/release/{dir}/vllm/feature_support_matrix.csv"
MATRIX_DIRS = {"v6e": "v6e", "tpu7x": "v7x"}
TPU_FEATURES: dict[str, dict[str, str]] = {
    "v6e": {
        "LoRA_Torch": "Passing",
        "Speculative Decoding: Ngram": "Passing",
        "Speculative Decoding: Eagle3": "Passing",
        "DCN-based P/D disaggregation": "Passing",
        "multi-host": "Untested",
    },
    "tpu7x": {
        "LoRA_Torch": "Passing",
        "Speculative Decoding: Ngram": "Passing",
        "Speculative Decoding: Eagle3": "Passing",
        "DCN-based P/D disaggregation": "Passing",
        "multi-host": "Passing",
    },
}
ENGINE = "vllm-tpu"  # stacks/facts/releases.py ENGINE_RELEASES


@dataclass(frozen=True)
class Source:
    """Where an adapter's files are: a gs:// prefix, or a Hugging Face repo at a revision (staged first)."""

    url: str | None = None
    repo: str | None = None
    revision: str | None = None


def parse_source(source: str) -> Source | None:
    if GS_SOURCE_RE.fullmatch(source):
        return Source(url=source if source.endswith("/") else source + "/")
    m = HF_SOURCE_RE.fullmatch(source)
    return Source(repo=m["repo"], revision=m["rev"]) if m else None


def tpu_support_problem(generation: str, feature: str, what: str) -> str | None:
    """Why `feature` (a row of the support matrix) is refused on `generation`, or None."""
    status = TPU_FEATURES.get(generation, {}).get(feature)
    if status == "Passing":
        return None
    passing = ", ".join(sorted(g for g, rows in TPU_FEATURES.items() if rows.get(feature) == "Passing"))
    if status:
        recorded = f"{SUPPORT_MATRIX.format(dir=MATRIX_DIRS[generation])} records {feature!r} as {status}"
    else:
        recorded = (
            f"its release support matrices ({SUPPORT_MATRIX.format(dir='<v6e|v7x>')}) cover "
            f"{', '.join(sorted(MATRIX_DIRS))} only"
        )
    return (
        f"{what} is not supported on {generation} in tpu-inference v0.27.0's release matrices (the pinned engine, "
        f"0.32.0, ships none): {recorded}; allowed: a pool of {passing}"
    )


def release_problem(image: str, feature: str, what: str) -> str | None:
    """Why `feature` is refused on the engine release the image runs (stacks/facts/releases.py), or None."""
    entry = releases.release_of_image(image)
    if entry is None:
        return None
    broken = releases.broken_features(entry.engine, entry.version).get(feature)
    if broken is None:
        return None
    return f"{what} is broken on {entry.engine} {entry.version}: {broken.summary} ({broken.source})"


def problems(path: str, loras: list, generation: str, image: str) -> list[Problem]:
    """Each adapter's source, unique names, and LoRA on the pool's generation and the engine release."""
    found: list[Problem] = []
    seen: dict[str, int] = {}
    for i, lora in enumerate(loras):
        if parse_source(lora.source) is None:
            found.append(
                Problem(
                    f"{path}.loras[{i}].source",
                    f"{lora.source!r} is neither gs://<bucket>/<prefix> nor a Hugging Face id at a revision "
                    "(<org>/<name>@<revision>, e.g. org/adapter@main or a commit id)",
                )
            )
        if lora.name in seen:
            found.append(Problem(f"{path}.loras[{i}].name", f"{lora.name!r} is loras[{seen[lora.name]}]'s name too"))
        seen.setdefault(lora.name, i)
    if loras:
        for why in (
            tpu_support_problem(generation, "LoRA_Torch", "LoRA"),
            release_problem(image, "lora", "LoRA"),
        ):
            if why:
                found.append(Problem(f"{path}.loras", why))
    return found


# Copies each adapter's (and a speculative draft model's) files from gs:// to the local disk before the server
# starts, as the workload's identity (read-only on their prefixes), with the image's google-cloud-storage
# (tpu-inference@v0.27.0 requirements.txt). Unlike the compile cache it fails the pod when a copy lacks the file that
# makes it what it is (an adapter's adapter_config.json, a model's config.json): vLLM would refuse to start.
PULL_SCRIPT = """
import json, os, sys
from google.cloud import storage
client = storage.Client()
for item in json.loads(os.environ["ITEMS"]):
    bucket, _, prefix = item["url"].removeprefix("gs://").partition("/")
    blobs = [b for b in client.list_blobs(bucket, prefix=prefix) if not b.name.endswith("/") and "/" not in b.name[len(prefix):]]
    if not any(b.name[len(prefix):] == item["require"] for b in blobs):
        sys.exit(f"{item['url']} has no {item['require']} ({item['name']})")
    os.makedirs(item["dir"], exist_ok=True)
    for blob in blobs:
        blob.download_to_filename(os.path.join(item["dir"], blob.name[len(prefix):]))
    print(f"{item['name']}: {len(blobs)} files from {item['url']}", flush=True)
"""
