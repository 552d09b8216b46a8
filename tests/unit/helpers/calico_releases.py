"""Calico's published release files for unit tests, from this machine only (never downloaded).

Looked for, in order: ``CALICO_OPS_RELEASES_DIR``; a ``shared/calico-releases`` folder beside any folder above
this file (the repository's ``../shared``, also from ansible-test's copy of the collection under ``.build``);
the folder the local control plane's mirror last found (``~/.cache/calico_ops/calico-releases.source``). A test
that needs a file none of them has fails and says where it looked: unit tests never reach the network
(``tests/unit/conftest.py`` fails any test that tries).

Imported as ``ansible_collections.calico_ops.lifecycle.tests.unit.helpers.calico_releases`` so that it resolves the
same way under ``ansible-test units`` as under plain pytest.
"""

import functools
import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve()


def _cache_root():
    env = os.environ.get("CALICO_OPS_CACHE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "calico_ops"


def candidates():
    found = []
    if os.environ.get("CALICO_OPS_RELEASES_DIR"):
        found.append(Path(os.environ["CALICO_OPS_RELEASES_DIR"]))
    found.extend(parent / "shared" / "calico-releases" for parent in HERE.parents)
    remembered = _cache_root() / "calico-releases.source"
    if remembered.is_file():
        found.append(Path(remembered.read_text().strip()))
    return found


@functools.lru_cache(maxsize=None)
def releases_dir():
    """The first folder holding the three release versions the tests use, or None."""
    for folder in candidates():
        if all((folder / v / "manifests" / "calico.yaml").is_file() for v in ("v3.27.5", "v3.29.7", "v3.31.4")):
            return folder
    return None


def release_path(version, name):
    folder = releases_dir()
    if folder is None:
        pytest.fail("Calico release files not found on this machine (unit tests do not download them); looked in: "
                    "%s. Set CALICO_OPS_RELEASES_DIR to a folder laid out as <version>/manifests/<file>."
                    % ", ".join(str(c) for c in candidates()), pytrace=False)
    return folder / version / "manifests" / name


def release_text(version, name):
    return release_path(version, name).read_text()
