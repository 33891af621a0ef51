"""Cloud KMS keys named in config: their form, and where a key must be for what it encrypts. Pure Python.

The form is the key's relative resource name, as the provider parses it (hashicorp/terraform-provider-google
google/services/kms ParseKmsCryptoKeyId, cryptoKeyRelativeLinkRegex, with verify.ProjectRegex for the project).
"""

from __future__ import annotations

import re

ENCRYPTER_DECRYPTER = "roles/cloudkms.cryptoKeyEncrypterDecrypter"
PROJECT = r"(?:(?:[-a-z0-9]{1,63}\.)*(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?):)?(?:[0-9]{1,19}|(?:[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?))"
KEY_NAME_RE = re.compile(
    rf"projects/{PROJECT}/locations/(?P<location>[a-z0-9-]+)/keyRings/[a-zA-Z0-9_-]{{1,63}}/cryptoKeys/[a-zA-Z0-9_-]{{1,63}}"
)
KEY_NAME_FORM = "projects/<project>/locations/<location>/keyRings/<key ring>/cryptoKeys/<key>"


def key_problem(name: str, location: str, of_what: str) -> str | None:
    """Why `name` cannot encrypt data in `location` (`of_what` says whose location it is), or None."""
    match = KEY_NAME_RE.fullmatch(name)
    if match is None:
        return f"{name!r} is not a Cloud KMS key name; expected {KEY_NAME_FORM}"
    if match["location"] != location.lower():
        return (
            f"the key is in {match['location']!r}, not in {of_what} {location.lower()!r}: the key must be in the "
            f"same location as the data it encrypts (allowed: projects/.../locations/{location.lower()}/...)"
        )
    return None


def gke_agent_member(project_number: str) -> str:
    """GKE's service agent, which encrypts Secrets with the key (application-layer secrets encryption)."""
    return f"serviceAccount:service-{project_number}@container-engine-robot.iam.gserviceaccount.com"
