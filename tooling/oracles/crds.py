"""`make crds`: download the upstream CRDs of exactly the versions in the version matrix into a cache in the
repository, each checked against its recorded sha256, so `--check` and the tests validate custom resources
on a fresh clone.

    .venv/bin/python -m tooling.oracles.crds                     # download into .cache/crds/ (git-ignored)
    .venv/bin/python -m tooling.oracles.crds --mirror URL        # from a mirror laid out as <owner>/<repo>/<tag>/<path>
    .venv/bin/python -m tooling.oracles.crds --where             # which CRD folder validation uses, and why

Where validation reads CRDs, first found wins: $TPU_SERVING_CRDS, this cache (only when it holds exactly the
matrix's files), <reference folder>/crds (../shared/reference, or $TPU_SERVING_REFERENCE). The table of files,
tags and sums is `CRDS` in stacks/facts/versions.py.
Nothing is written unless every file downloads and matches its sum.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import socket
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from stacks.facts.versions import CRDS, CrdFile, crd_cache_path
from tooling.harness.offline import ROOT

CACHE = ROOT / ".cache" / "crds"
MANIFEST = "SHA256SUMS"
CRD_DIR_ENV = "TPU_SERVING_CRDS"
REFERENCE_ENV = "TPU_SERVING_REFERENCE"
GITHUB_RAW = "https://raw.githubusercontent.com/"


def expected() -> dict[str, CrdFile]:
    """Relative path in a CRD folder -> the upstream file that belongs there."""
    return {
        f"{crd_cache_path(project, version)}{crd.file_name}": crd
        for project, versions in CRDS.items()
        for version, files in versions.items()
        for crd in files
    }


def manifest_text() -> str:
    """`sha256sum` format, so `cd .cache/crds && sha256sum -c SHA256SUMS` checks the cache by hand."""
    return "".join(f"{crd.sha256}  {rel}\n" for rel, crd in sorted(expected().items()))


def reference_dir() -> Path:
    """The folder of upstream files at pinned tags beside the project's own checkout (../shared/reference), or
    $TPU_SERVING_REFERENCE: never on a user's clone, so whatever reads it says so and skips when it is absent."""
    return Path(os.environ.get(REFERENCE_ENV) or ROOT.parent / "shared" / "reference")


def cache_is_current(cache: Path = CACHE) -> bool:
    manifest = cache / MANIFEST
    return manifest.is_file() and manifest.read_text() == manifest_text()


def crd_source(cache: Path = CACHE, reference: Path | None = None) -> tuple[Path | None, str]:
    """(the CRD folder validation uses, a sentence saying which source applies). `reference` defaults to
    reference_dir()/crds."""
    reference = reference if reference is not None else reference_dir() / "crds"
    configured = os.environ.get(CRD_DIR_ENV)
    if configured:
        path = Path(configured)
        if path.is_dir():
            return path, f"CRDs from ${CRD_DIR_ENV} ({path})"
        return None, f"${CRD_DIR_ENV}={configured} is not a directory"
    if cache_is_current(cache):
        return cache, f"CRDs from the `make crds` cache ({cache})"
    stale = " (the `make crds` cache is out of date with the version matrix)" if (cache / MANIFEST).exists() else ""
    if reference.is_dir():
        return reference, f"CRDs from {reference}{stale}"
    return None, f"no CRDs: run `make crds` (or set ${CRD_DIR_ENV}){stale}"


def _url(crd: CrdFile, mirror: str | None) -> str:
    if not mirror:
        return crd.url
    return mirror.rstrip("/") + "/" + crd.url.removeprefix(GITHUB_RAW)


UNREACHABLE = "no answer (offline?): the other files were not tried"
OPTIONAL = (
    "`make crds` is optional: it lets `make render --check` and the tests validate custom resources against the "
    "upstream CRDs without a reference folder. Without them the render lists those objects as not checked and their "
    "tests skip, saying why; everything else works offline. Now: {where}"
)


def _fetch(url: str, timeout: float) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 (https or a chosen mirror)
        return response.read()


def download(cache: Path = CACHE, mirror: str | None = None, timeout: float = 60.0) -> list[str]:
    """Download every CRD of the matrix into `cache`; returns the problems (nothing is written unless none)."""
    problems: list[str] = []
    fetched: dict[str, bytes] = {}
    for rel, crd in sorted(expected().items()):
        url = _url(crd, mirror)
        try:
            data = _fetch(url, timeout)
        except urllib.error.HTTPError as err:  # the server answered: the next file may still be there
            problems.append(f"{rel}: cannot download {url}: {err}")
            continue
        except (urllib.error.URLError, OSError, ValueError) as err:
            reason = getattr(err, "reason", err)
            if isinstance(reason, ConnectionError | socket.gaierror | TimeoutError):  # no answer (offline): stop
                problems.append(f"{rel}: cannot download {url}: {err}; {UNREACHABLE}")
                break
            problems.append(f"{rel}: cannot download {url}: {err}")
            continue
        digest = hashlib.sha256(data).hexdigest()
        if digest != crd.sha256:
            problems.append(
                f"{rel}: sha256 {digest} from {url} does not match the recorded {crd.sha256} "
                f"({crd.repo}@{crd.tag}:{crd.path}, stacks/facts/versions.py CRDS)"
            )
            continue
        fetched[rel] = data
    if problems:
        return problems
    cache.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".crds-", dir=cache.parent))
    for rel, data in fetched.items():
        (staging / rel).parent.mkdir(parents=True, exist_ok=True)
        (staging / rel).write_bytes(data)
    (staging / MANIFEST).write_text(manifest_text())
    if cache.exists():
        shutil.rmtree(cache)
    staging.rename(cache)
    return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=CACHE, help="where to write (default: .cache/crds/)")
    parser.add_argument(
        "--mirror",
        default=os.environ.get("TPU_SERVING_CRDS_MIRROR"),
        help="base URL replacing https://raw.githubusercontent.com/ (default: $TPU_SERVING_CRDS_MIRROR)",
    )
    parser.add_argument("--where", action="store_true", help="print which CRD folder validation uses and exit")
    args = parser.parse_args(argv)
    if args.where:
        print(crd_source(args.cache)[1])
        return 0
    problems = download(args.cache, args.mirror)
    for line in problems:
        print(f"error: {line}", file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem(s); nothing written to {args.cache}", file=sys.stderr)
        print(OPTIONAL.format(where=crd_source(args.cache)[1]), file=sys.stderr)
        return 1
    print(f"{len(expected())} CRD files verified -> {args.cache}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
