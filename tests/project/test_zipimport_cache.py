"""tests/tools/zipimport_cache.py: what `make venv` installs so that the tests' Ansible module processes compile the
AnsiballZ payload's source once. Each case runs a fresh Python of the venv (the hook acts at interpreter start, from
its ``.pth`` line) that imports a module from a zip, the way an AnsiballZ payload is imported."""

import importlib.util
import marshal
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[1] / "tools" / "zipimport_cache.py"
ENV = "CALICO_OPS_TEST_ZIPIMPORT_CACHE"
PROBE = """
import sys
sys.path.insert(0, sys.argv[1])
import payload_mod
print(payload_mod.VALUE)
print(payload_mod.where.__code__.co_filename)
print(payload_mod.__file__)
"""


def make_zip(path, value):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("payload_mod.py", "VALUE = %r\n\n\ndef where():\n    return 1\n" % value)
    return path


def run(zip_path, cache=None):
    env = dict(os.environ)
    env.pop(ENV, None)
    if cache is not None:
        env[ENV] = str(cache)
    # -S: not the copy `make venv` installed (its .pth line runs it at start), this file's, run first the same way
    code = "exec(compile(open(%r).read(), %r, 'exec'))\n" % (str(TOOL), str(TOOL)) + PROBE
    out = subprocess.run([sys.executable, "-S", "-c", code, str(zip_path)], env=env, capture_output=True, text=True,
                         check=True)
    return out.stdout.split("\n")[:3]


def cached_files(cache):
    return sorted(p for p in Path(cache).rglob("*") if p.is_file())


def test_the_second_import_is_served_from_the_cache_with_its_own_file_name(tmp_path):
    cache = tmp_path / "cache"
    (tmp_path / "a").mkdir()
    first = make_zip(tmp_path / "a" / "payload.zip", "one")
    assert run(first, cache) == ["one", str(first / "payload_mod.py"), str(first / "payload_mod.py")]
    files = cached_files(cache)
    assert len(files) == 1
    # what the cache holds is what the second import runs: replace it with other code, same key
    files[0].write_bytes(marshal.dumps(compile("VALUE = 'from the cache'\n\ndef where():\n    return 2\n",
                                               "elsewhere.py", "exec")))
    (tmp_path / "b").mkdir()
    second = make_zip(tmp_path / "b" / "payload.zip", "one")
    value, func_file, mod_file = run(second, cache)
    assert value == "from the cache"
    # every code object names this import's own path, as a fresh compile would
    assert func_file == str(second / "payload_mod.py")
    assert mod_file == str(second / "payload_mod.py")


def test_changed_source_is_compiled_again(tmp_path):
    cache = tmp_path / "cache"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert run(make_zip(tmp_path / "a" / "p.zip", "one"), cache)[0] == "one"
    assert run(make_zip(tmp_path / "b" / "p.zip", "two"), cache)[0] == "two"
    assert len(cached_files(cache)) == 2


def test_a_damaged_cache_entry_is_compiled_again(tmp_path):
    cache = tmp_path / "cache"
    (tmp_path / "a").mkdir()
    assert run(make_zip(tmp_path / "a" / "p.zip", "one"), cache)[0] == "one"
    entry = cached_files(cache)[0]
    for damaged in (b"not marshal data", marshal.dumps(12345)):  # unreadable, and readable but not code
        entry.write_bytes(damaged)
        assert run(tmp_path / "a" / "p.zip", cache)[0] == "one"
        assert marshal.loads(entry.read_bytes()).co_filename.endswith("payload_mod.py")  # written again


def test_nothing_is_cached_unless_the_variable_is_set(tmp_path):
    (tmp_path / "a").mkdir()
    assert run(make_zip(tmp_path / "a" / "p.zip", "one"), None)[0] == "one"
    assert [p.name for p in tmp_path.rglob("*")] == ["a", "p.zip"]


def test_the_repositorys_venv_runs_this_files_hook():
    """`make venv` copies this file into .venv's site-packages with a .pth line; an edited tool is copied again."""
    root = Path(__file__).resolve().parents[2]
    if Path(sys.prefix).resolve() != (root / ".venv").resolve():
        pytest.fail("run by the repository's .venv (make test does): %s" % sys.prefix)
    installed = Path(importlib.util.find_spec("_calico_ops_zipimport_cache").origin)
    assert installed.read_text() == TOOL.read_text()
    assert (installed.parent / "_calico_ops_zipimport_cache.pth").read_text() == "import _calico_ops_zipimport_cache\n"


# ---- the controller's half: Ansible's collection loader and the AnsiballZ import scan ------------------------------
CONTROLLER_PROBE = """
import sys, json
sys.path.append(sys.argv[1])  # site-packages without its .pth lines (-S): this file's hook only, not the installed one
exec(compile(open(sys.argv[2]).read(), sys.argv[2], 'exec'))
from ansible.utils.collection_loader import _collection_finder
from ansible.executor import module_common
loader_compile = getattr(_collection_finder, 'compile', compile)
code = loader_compile(source=sys.argv[3], filename='/c/plugins/filter/f.py', mode='exec', flags=0, dont_inherit=True)
space = {}
exec(code, space)
finder = module_common.ModuleDepFinder('ansible_collections.ns.c.plugins.modules.m', sys.argv[4].encode())
print(json.dumps({"value": space.get("VALUE"), "file": code.co_filename,
                  "patched": hasattr(_collection_finder, 'compile'),
                  "submodules": sorted('.'.join(s) for s in finder.submodules)}))
"""
BASIC = "from ansible.module_utils.basic import AnsibleModule\n"
URLS = "from ansible.module_utils.urls import open_url\n"


def run_controller(cache, source="VALUE = 'one'\n", module=BASIC):
    import json
    import sysconfig
    env = dict(os.environ)
    env.pop(ENV, None)
    if cache is not None:
        env[ENV] = str(cache)
    out = subprocess.run([sys.executable, "-S", "-c", CONTROLLER_PROBE, sysconfig.get_paths()["purelib"], str(TOOL),
                          source, module], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_controllers_compiles_are_kept_and_served_from_the_cache(tmp_path):
    import pickle
    cache = tmp_path / "cache"
    first = run_controller(cache)
    assert first == {"value": "one", "file": "/c/plugins/filter/f.py", "patched": True,
                     "submodules": ["ansible.module_utils.basic.AnsibleModule"]}
    files = [p for p in cached_files(cache) if "controller" in p.parts]
    assert len(files) == 2  # the collection source's code, the import scan's findings
    code_entry = next(p for p in files if p.read_bytes()[:1] != b"\x80")  # pickle starts with its protocol byte
    scan_entry = next(p for p in files if p != code_entry)
    # what the cache holds is what the next run gets: replace both, same keys
    code_entry.write_bytes(marshal.dumps(compile("VALUE = 'from the cache'\n", "/c/plugins/filter/f.py", "exec")))
    scan_entry.write_bytes(pickle.dumps(({("ansible", "module_utils", "cached")}, set(), set())))
    assert run_controller(cache) == {"value": "from the cache", "file": "/c/plugins/filter/f.py", "patched": True,
                                     "submodules": ["ansible.module_utils.cached"]}


def test_a_changed_source_is_compiled_and_scanned_again(tmp_path):
    cache = tmp_path / "cache"
    run_controller(cache)
    again = run_controller(cache, source="VALUE = 'two'\n", module=URLS)
    assert again["value"] == "two" and again["submodules"] == ["ansible.module_utils.urls.open_url"]
    assert len([p for p in cached_files(cache) if "controller" in p.parts]) == 4


def test_a_damaged_controller_entry_is_computed_again(tmp_path):
    cache = tmp_path / "cache"
    run_controller(cache)
    for entry in [p for p in cached_files(cache) if "controller" in p.parts]:
        entry.write_bytes(b"not marshal nor pickle data")
    assert run_controller(cache)["submodules"] == ["ansible.module_utils.basic.AnsibleModule"]
    assert all(p.read_bytes() != b"not marshal nor pickle data" for p in cached_files(cache))


def test_the_controller_is_left_alone_unless_the_variable_is_set(tmp_path):
    alone = run_controller(None)
    assert alone["value"] == "one" and alone["patched"] is False
    assert list(tmp_path.rglob("*")) == []
