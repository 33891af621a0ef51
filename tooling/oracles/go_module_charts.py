"""Chart sources not in ../shared/reference, taken from the Go module proxy (a registry the project may use; plain
HTTPS, no Go needed): the module zip of the chart's repository at its release, verified against the sha256 and go.sum
hash the version matrix records, and the chart's folder extracted into the git-ignored cache (`make bbr-chart`):

    .cache/charts/<folder>/<path in the repository>

the layout chart_objects.chart_dir looks in (after the reference folder's charts/ and charts-staged/).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import shutil
import urllib.request
import zipfile
from pathlib import Path

from stacks.facts import versions
from stacks.model import local_target

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "charts"


def dirhash_h1(archive: zipfile.ZipFile) -> str:
    """The go.sum hash of a module zip: golang.org/x/mod/sumdb/dirhash Hash1 (sha256 over the sorted lines
    "<sha256 hex>  <file name>\\n" of every file, base64, prefixed "h1:")."""
    names = sorted(n for n in archive.namelist() if not n.endswith("/"))
    lines = "".join(f"{hashlib.sha256(archive.read(n)).hexdigest()}  {n}\n" for n in names)
    return "h1:" + base64.b64encode(hashlib.sha256(lines.encode()).digest()).decode()


def verified(data: bytes, pin: versions.GoModuleZip) -> zipfile.ZipFile:
    """The zip, or ValueError naming the hash that does not match the version matrix."""
    digest = hashlib.sha256(data).hexdigest()
    if digest != pin.sha256:
        raise ValueError(f"{pin.url}: sha256 {digest}, the version matrix records {pin.sha256}")
    archive = zipfile.ZipFile(io.BytesIO(data))
    h1 = dirhash_h1(archive)
    if h1 != pin.h1:
        raise ValueError(f"{pin.url}: go.sum hash {h1}, the version matrix records {pin.h1}")
    return archive


def extract_chart(archive: zipfile.ZipFile, pin: versions.GoModuleZip, chart: str, dest: Path = CACHE) -> Path:
    """Extract the chart's folder (local_target.CHART_SOURCES) from the module zip under `dest`."""
    folder, _, path = local_target.CHART_SOURCES[chart]
    prefix = f"{pin.module}@{pin.version}/{path}/"
    members = [n for n in archive.namelist() if n.startswith(prefix) and not n.endswith("/")]
    if not members:
        raise ValueError(f"{pin.url} holds no {path}")
    target = dest / folder.format(version=pin.version) / path
    if target.exists():
        shutil.rmtree(target)
    for name in members:
        out = target / name[len(prefix) :]
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(archive.read(name))
    return target


def fetch(pin: versions.GoModuleZip, chart: str, dest: Path = CACHE) -> Path:
    with urllib.request.urlopen(pin.url, timeout=60) as response:  # noqa: S310 (https, the proxy's URL)
        data = response.read()
    return extract_chart(verified(data, pin), pin, chart, dest)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    print(f"body-based-routing -> {fetch(versions.BODY_BASED_ROUTER_MODULE, 'body-based-routing')}")


if __name__ == "__main__":
    main()
