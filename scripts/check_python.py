"""Run by `make venv` before it creates or uses the virtualenv, with the interpreter the user has ($(PYTHON)).

- Refuses an interpreter older than pyproject.toml's requires-python, naming the version needed, before anything
  is installed (Python 3.10 would install everything, then fail importing `typing.Self`).
- Removes a virtualenv that another Python minor version made (or that is broken: no pyvenv.cfg, no bin/python),
  so that make rebuilds it with this one; one made by a symlinked path is left alone, with a message.

It runs under whatever `python3` a user has, so it uses only what every Python 3 parses (no f-strings).
Exit status: 0 fine (maybe after removing the virtualenv), 1 refused.
"""

import os
import re
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def required():
    """(major, minor) from pyproject.toml's `requires-python = ">=X.Y"`."""
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        found = re.search(r'^requires-python\s*=\s*">=\s*(\d+)\.(\d+)"', f.read(), re.M)
    return int(found.group(1)), int(found.group(2))


def venv_python(venv):
    """(major, minor) of the Python that made the virtualenv, or None when it is not a working one."""
    cfg = os.path.join(venv, "pyvenv.cfg")
    if not os.path.isfile(cfg) or not os.access(os.path.join(venv, "bin", "python"), os.X_OK):
        return None
    with open(cfg) as f:
        for line in f:
            key, _, value = line.partition("=")
            if key.strip() in ("version", "version_info"):
                parts = value.strip().split(".")
                return int(parts[0]), int(parts[1])
    return None


def main(argv):
    venv = argv[1] if len(argv) > 1 else ".venv"
    need = required()
    have = tuple(sys.version_info[:2])
    if have < need:
        sys.stderr.write(
            "tpu-serving needs Python %d.%d or newer (pyproject.toml requires-python); %s is Python %d.%d.\n"
            "Install Python %d.%d+ and run: make venv PYTHON=python%d.%d\n"
            % (need + (sys.executable,) + have + need + need)
        )
        return 1
    if not os.path.lexists(venv):
        return 0
    made = venv_python(venv)
    if made == have:
        return 0
    what = "made by Python %d.%d" % made if made else "not a working virtualenv"
    if os.path.islink(venv):
        sys.stderr.write(
            "%s is %s and %s is Python %d.%d; %s is a symlink, so it is left alone: remove the link and run "
            "make venv again\n" % ((venv, what, sys.executable) + have + (venv,))
        )
        return 1
    sys.stdout.write("rebuilding %s: it is %s, and %s is Python %d.%d\n" % ((venv, what, sys.executable) + have))
    shutil.rmtree(venv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
