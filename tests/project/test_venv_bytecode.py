"""The venvs make creates hold compiled bytecode (Makefile ``uv-install``: ``uv pip install --compile-bytecode``).

uv writes no ``.pyc`` at install, and where ``PYTHONDONTWRITEBYTECODE`` is set (this machine's environment sets it)
Python never writes one: every process then compiles from source everything it imports. make test starts thousands
of them (ansible-playbook, one module process per task, ansible-lint, Molecule); measured 2026-12-06, 60 ping tasks
took 23.3 s of CPU from source and 15.9 s compiled. This test fails when a venv make test uses has lost its bytecode
(the flag dropped, or a venv filled another way).
"""

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# make test's venvs (Makefile: VENV, the oldest core's matrix venv, the importer's); a venv not made here is skipped
VENVS = [ROOT / ".venv", ROOT / ".build" / "venv-core-2.16", ROOT / ".build" / "venv-importer"]
# what every Ansible process imports: the controller's start, and each module process's ansible.module_utils.basic
MODULES = ("ansible.module_utils.basic", "ansible.module_utils.compat.typing", "yaml", "jinja2")


def _missing(venv):
    """The modules of ``MODULES`` importable in ``venv`` whose compiled file is not next to their source."""
    # asked of the venv's own Python: its version (and so its cache file's name) may differ from this one's
    code = ("import importlib.util, sys\n"
            "for name in sys.argv[1:]:\n"
            "    spec = importlib.util.find_spec(name)\n"
            "    if spec is not None and spec.origin and spec.origin.endswith('.py'):\n"
            "        print(name, importlib.util.cache_from_source(spec.origin))\n")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", code, *MODULES], capture_output=True, text=True,
                         check=True).stdout
    return [name for name, cached in (line.split(" ", 1) for line in out.splitlines()) if not Path(cached).is_file()]


@pytest.mark.parametrize("venv", VENVS, ids=lambda v: v.relative_to(ROOT).as_posix())
def test_make_tests_venvs_are_byte_compiled(venv):
    if not (venv / "bin" / "python").exists():
        pytest.skip("%s not made here" % venv.relative_to(ROOT))
    missing = _missing(venv)
    assert not missing, "%s has no bytecode for %s: every process compiles them from source (Makefile uv-install; remove the venv and run make test-prerequisites)" % (
        venv.relative_to(ROOT), ", ".join(missing))
