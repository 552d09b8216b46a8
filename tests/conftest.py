"""Test configuration shared by unit, integration and reliability tests.

Puts ``tests/`` on sys.path (for the ``localcp`` harness) and the repository on an
``ansible_collections/calico_ops/lifecycle`` path so ``ansible_collections.calico_ops.lifecycle...``
imports resolve to this working tree.
"""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Ansible modules run by the tests compile their AnsiballZ payload's source once, not on every task
# (tests/tools/zipimport_cache.py, installed into .venv by `make venv`); the children (ansible-playbook, Molecule,
# ansible-runner) inherit it
os.environ.setdefault("CALICO_OPS_TEST_ZIPIMPORT_CACHE", str(HERE.parent / ".build" / "zipimport-cache"))
# a playbook that fails after its checks leaves a diagnostics archive (roles/diagnostics): the tests' playbooks run
# from the repository's root, so the default ./calico-diagnostics would land in it; a test that looks for an archive
# sets diagnostics_dir itself (localcp.fixtures.Ansible does for its runs)
# ansible-playbook's main process polls for finished tasks every 0.01 s, not every 0.001 s (tests/ansible.cfg says
# what that saves); the children (ansible-playbook, ansible-runner, Ansible commands) inherit it
os.environ.setdefault("ANSIBLE_CONFIG", str(HERE / "ansible.cfg"))
os.environ.setdefault("CALICO_OPS_DIAGNOSTICS_DIR", str(HERE.parent / ".build" / "test-diagnostics"))
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from localcp.fixtures import collections_path  # noqa: E402

_COLL = collections_path()
if _COLL not in sys.path:
    sys.path.insert(0, _COLL)

pytest_plugins = ["localcp.fixtures", "localcp.cpu_log"]
