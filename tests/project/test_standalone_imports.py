"""What runs outside pytest imports without the collections path: Molecule's stand-in of calico-node
(extensions/molecule/shared/files/calico_stand_in.py, started by a scenario with only tests/ on PYTHONPATH) and the
benchmarks (`make bench`: tests and tests/integration). Under pytest, tests/conftest.py puts ``ansible_collections``
on sys.path; these have no conftest, so a test helper they import that imports the collection at import time stops
them (2026-12-07: the stand-in died at start, two Molecule scenarios failed waiting for its ClusterInformation)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(args, pythonpath):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ANSIBLE_COLLECTIONS_PATH")}
    env["PYTHONPATH"] = os.pathsep.join(str(ROOT / p) for p in pythonpath)
    return subprocess.run([sys.executable] + args, capture_output=True, text=True, env=env, cwd=str(ROOT),
                          timeout=120, check=False)


def test_the_molecule_stand_in_starts_with_only_tests_on_its_path():
    proc = _run([str(ROOT / "extensions" / "molecule" / "shared" / "files" / "calico_stand_in.py"), "--help"],
                ["tests"])
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_the_benchmarks_import_their_jobs_with_tests_and_tests_integration_on_their_path():
    proc = _run(["-c", "import benchmarks.run"], [".", "tests", "tests/integration"])
    assert proc.returncode == 0, proc.stderr[-2000:]
