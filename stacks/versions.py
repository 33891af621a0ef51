"""The version matrix: the one place that pins what tpu-serving runs with.

Python packages are installed from requirements.txt, which must agree with PYTHON_PACKAGES (a test checks).
Helm charts and container images are added here by the add-on and workload layers, never pinned elsewhere.
"""

from __future__ import annotations

PYTHON_PACKAGES: dict[str, str] = {
    "pulumi": "3.272.0",
    "pulumi-gcp": "10.2.0",
    "pulumi-kubernetes": "4.34.2",
    "pydantic": "2.14.3",
    "PyYAML": "6.0.3",
    "pytest": "9.2.0",
    "pytest-timeout": "2.4.0",
}
