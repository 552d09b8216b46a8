"""Tests only: Python compiled once per source, not once per task: the module processes' AnsiballZ payload, and on
the controller Ansible's collection loader and the AnsiballZ import scan.

An Ansible module runs from a zip (AnsiballZ) that holds the module and its module_utils as ``.py`` source only, and
Python's zipimport compiles every imported file on every import (CPython 3.11 even compiles each file twice: once
to answer ``find_spec`` through ``get_filename``, once for ``get_code``). Measured 2026-11-27 (py-spy, 50
``ansible.builtin.ping`` tasks): a third of the whole run's CPU was zipimport compiling the same unchanged
``ansible.module_utils`` sources again. The test suites run thousands of module tasks on two CPUs, so this is where
their time went.

``make venv`` installs this file into the development venv's site-packages (``_calico_ops_zipimport_cache.py``)
with a ``.pth`` line that imports it in every Python process of that venv. It does nothing unless
``CALICO_OPS_TEST_ZIPIMPORT_CACHE`` names a directory (tests/conftest.py and tests/run-checks.sh set it to
``.build/zipimport-cache``; ``make demo``, the benchmarks and a user's own runs leave it unset). When set, it
replaces zipimport's ``_compile_source`` with one that keeps the compiled code of each source text (keyed by the
SHA-256 of the path inside the zip and the source bytes) as a marshal file, and hands out that code with every
code object's ``co_filename`` set to this import's own path, as a fresh compile would. The code run is the code the
source compiles to: same source bytes, same compiler, same Python (the cache directory is per Python version).

The controller (ansible-playbook) forks a worker per task, and what a worker compiles dies with it. Measured
2026-12-06 (cProfile of every worker, install_ebpf.yml re-run on kwok nodes, 112 tasks, 15 s of CPU): 1.9 s went to
the AnsiballZ import scan (``module_common.recursive_finder`` parses every module_utils file's AST again for each
module in each run: ansible-core caches the payload for one run only) and 0.4 s to the collection loader compiling
the collection's filter, action and module_utils sources in each worker. So, with the variable set, the hook also
patches two places right after Ansible imports them (a ``sys.meta_path`` entry that only watches those two names):
- ``ansible.utils.collection_loader._collection_finder``: its loader's ``compile`` of a collection source is served
  from a marshal file keyed by the SHA-256 of the file name and the source, as above;
- ``ansible.executor.module_common.ModuleDepFinder``: what its AST walk finds (the imports, the optional ones, the
  embedded resources) is kept per SHA-256 of ansible-core's version, the module's name, its package flag and its
  source. The walk is a pure function of those; the files it leads to are still located and read afresh, so an edited
  module_utils file is packed as it is now. Where module metadata is on (``_MODULE_METADATA``, off by default) the
  walk runs as always.
Anything unexpected (another ansible-core whose names differ, a cache entry that does not load) falls back to what
Ansible does itself.
"""

import os

_ENV = "CALICO_OPS_TEST_ZIPIMPORT_CACHE"


def _entry(directory, *parts):
    """The cache file of one entry: the SHA-256 of its parts joined by NUL bytes."""
    import hashlib
    key = hashlib.sha256(b"\0".join(parts)).hexdigest()
    return os.path.join(directory, key[:2], key)


def _load(path, read):
    """``read(bytes)`` of the entry, or None when it is missing or damaged (then computed again and replaced)."""
    try:
        with open(path, "rb") as f:
            return read(f.read())
    except Exception:
        return None


def _store(path, data):
    """Written whole or not at all (a file of its own, then renamed): concurrent processes never read half of it."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = "%s.%d.tmp" % (path, os.getpid())
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        pass


def _install(root):
    # imported here: with the variable unset (every Python process of the venv runs this file) nothing else is
    import marshal
    import sys
    import types
    import zipimport

    if getattr(zipimport, "_compile_source", None) is None:  # not CPython's zipimport: nothing to do
        return
    directory = os.path.join(root, sys.implementation.cache_tag)  # e.g. cpython-311: one per Python version
    original = zipimport._compile_source

    def refile(code, filename):
        consts = tuple(refile(c, filename) if isinstance(c, type(code)) else c for c in code.co_consts)
        return code.replace(co_filename=filename, co_consts=consts)

    def compile_source(pathname, source):
        inner = pathname.split(".zip" + os.sep, 1)[-1]
        path = _entry(directory, inner.encode("utf-8", "surrogateescape"), source)
        cached = _load(path, marshal.loads)
        if isinstance(cached, types.CodeType):  # anything else (a damaged entry) is compiled again and replaced
            return refile(cached, pathname)
        code = original(pathname, source)
        if code is not None:
            _store(path, marshal.dumps(code))
        return code

    zipimport._compile_source = compile_source
    _install_controller(os.path.join(directory, "controller"))


def _install_controller(directory):
    # ast and pickle (15 ms of imports) only where Ansible's controller code is imported: inside the patches
    import builtins
    import marshal
    import sys
    import types

    def as_bytes(source):
        if isinstance(source, (bytes, bytearray)):
            return bytes(source)
        return str(source).encode("utf-8", "surrogateescape")

    def cached_compile(source, filename, mode, flags=0, dont_inherit=False, optimize=-1):
        if mode != "exec" or flags or not dont_inherit or optimize != -1 or not isinstance(filename, str):
            return builtins.compile(source, filename, mode, flags, dont_inherit, optimize)
        path = _entry(directory, b"collection-loader", filename.encode("utf-8", "surrogateescape"), as_bytes(source))
        code = _load(path, marshal.loads)
        if isinstance(code, types.CodeType):
            return code
        code = builtins.compile(source, filename, mode, flags, dont_inherit, optimize)
        _store(path, marshal.dumps(code))
        return code

    def patch_collection_finder(module):
        module.compile = cached_compile  # get_code's compile(source=..., filename=..., mode='exec', ...) finds it first

    def patch_module_common(module):
        import ast
        import pickle

        finder = module.ModuleDepFinder
        walk = finder.__init__  # patched in place: its own super(ModuleDepFinder, self) call must still find the class

        def __init__(self, module_fqn, module_data, is_pkg_init=False, *args, **kwargs):
            if args or kwargs or module.C.config.get_config_value("_MODULE_METADATA"):
                walk(self, module_fqn, module_data, is_pkg_init, *args, **kwargs)
                return
            path = _entry(directory, b"module-dep-finder", str(getattr(module, "__version__", "")).encode(),
                          str(module_fqn).encode(), str(bool(is_pkg_init)).encode(), as_bytes(module_data))
            found = _load(path, pickle.loads)
            if isinstance(found, tuple) and len(found) == 3:
                ast.NodeVisitor.__init__(self)
                self.submodules, self.optional_imports, self.embeds = (set(x) for x in found)
                self.module_fqn, self.is_pkg_init = module_fqn, is_pkg_init
                self.tree = ast.Module(body=[], type_ignores=[])  # read only for module metadata (off here)
                return
            walk(self, module_fqn, module_data, is_pkg_init)
            try:
                _store(path, pickle.dumps((self.submodules, self.optional_imports, self.embeds)))
            except Exception:
                pass

        finder.__init__ = __init__

    patches = {"ansible.utils.collection_loader._collection_finder": patch_collection_finder,
               "ansible.executor.module_common": patch_module_common}

    class AfterImport:
        """Finds nothing itself: for the two modules above, wraps the real loader to patch once they are executed."""

        @staticmethod
        def find_spec(name, path=None, target=None):
            patch = patches.get(name)
            if patch is None:
                return None
            for finder in sys.meta_path:
                find = getattr(finder, "find_spec", None)
                if finder is AfterImport or find is None:
                    continue
                spec = find(name, path, target)
                if spec is not None and spec.loader is not None:
                    break
            else:
                return None
            run = spec.loader.exec_module

            def exec_module(module):
                run(module)
                try:
                    patch(module)
                except Exception:  # another ansible-core: Ansible as it is
                    pass

            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, AfterImport)


if os.environ.get(_ENV):
    _install(os.environ[_ENV])
