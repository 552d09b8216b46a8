"""Tests only: module processes compile the AnsiballZ payload's Python once per source, not once per task.

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
"""

import os

_ENV = "CALICO_OPS_TEST_ZIPIMPORT_CACHE"


def _install(root):
    # imported here: with the variable unset (every Python process of the venv runs this file) nothing else is
    import hashlib
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
        key = hashlib.sha256(inner.encode("utf-8", "surrogateescape") + b"\0" + source).hexdigest()
        path = os.path.join(directory, key[:2], key)
        try:
            with open(path, "rb") as f:
                cached = marshal.loads(f.read())
        except (OSError, ValueError, EOFError, TypeError):
            cached = None
        if isinstance(cached, types.CodeType):  # anything else (a damaged entry) is compiled again and replaced
            return refile(cached, pathname)
        code = original(pathname, source)
        if code is not None:
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                tmp = "%s.%d.tmp" % (path, os.getpid())
                with open(tmp, "wb") as f:
                    f.write(marshal.dumps(code))
                os.replace(tmp, path)
            except OSError:
                pass
        return code

    zipimport._compile_source = compile_source


if os.environ.get(_ENV):
    _install(os.environ[_ENV])
