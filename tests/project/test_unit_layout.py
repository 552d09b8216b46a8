"""tests/unit mirrors plugins/ (issue 41): the tests of ``plugins/<dir>/<file>.py`` are in
``tests/unit/plugins/<dir>/test_<file>.py``, one test file per source file, in the same folders.

Checked both ways: every test file under tests/unit/plugins names a source file at the mirrored path, and every
source file of module_utils, action and filter has its test file, save the exemptions below (each with its reason:
no logic to test). Shared fakes live in tests/unit/helpers, not among the mirrored test files, and every folder of
tests/unit is a package, so that same-named test files of different folders (``test_rules.py``) import under plain
pytest as under ``ansible-test units``.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ROOT / "plugins"
UNIT = ROOT / "tests" / "unit"
MIRROR = UNIT / "plugins"

# the plugin folders whose every source file needs its test file (modules are thin: docs and a short main, a test
# file only where there are tests of the module; doc fragments hold documentation only)
COVERED = ("module_utils", "action", "filter")

# source file (a path relative to plugins/, or a file name in any folder) -> why it has no test file of its own
EXEMPT = {
    "__init__.py": "package markers: exempt as long as they hold no statement (checked below)",
}


def _rel(path, base):
    return path.relative_to(base).as_posix()


def _is_marker(path):
    """An ``__init__.py`` with nothing in it but comments or a docstring."""
    if path.name != "__init__.py":
        return False
    body = ast.parse(path.read_text()).body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        body = body[1:]
    return not body


def _exempt(source):
    rel = _rel(source, PLUGINS)
    if source.name == "__init__.py":
        return "__init__.py" in EXEMPT and _is_marker(source)
    return rel in EXEMPT or source.name in EXEMPT


def _test_path(source):
    """tests/unit/plugins/<dir>/test_<file>.py for plugins/<dir>/<file>.py."""
    rel = source.relative_to(PLUGINS)
    return MIRROR / rel.parent / ("test_" + rel.name)


def _source_path(test):
    rel = test.relative_to(MIRROR)
    return PLUGINS / rel.parent / rel.name[len("test_"):]


def _sources():
    for folder in COVERED:
        for path in sorted((PLUGINS / folder).rglob("*.py")):
            yield path


def test_every_unit_test_file_has_its_source_at_the_mirrored_path():
    misplaced = []
    for test in sorted(MIRROR.rglob("test_*.py")):
        source = _source_path(test)
        if not source.is_file():
            misplaced.append("%s: no %s" % (_rel(test, ROOT), _rel(source, ROOT)))
    assert not misplaced, (
        "test files under tests/unit/plugins must mirror a source file of plugins/ (tests of "
        "plugins/<dir>/<file>.py go to tests/unit/plugins/<dir>/test_<file>.py; shared fakes to tests/unit/helpers):\n"
        + "\n".join(misplaced))


def test_every_source_file_has_its_mirrored_test_file():
    missing = []
    for source in _sources():
        if _exempt(source):
            continue
        if not _test_path(source).is_file():
            missing.append("%s: no %s" % (_rel(source, ROOT), _rel(_test_path(source), ROOT)))
    for key, reason in sorted(EXEMPT.items()):  # an exemption says why, and goes once it is not needed
        sources = [PLUGINS / key] if "/" in key else [p for p in _sources() if p.name == key]
        if not reason.strip():
            missing.append("EXEMPT %s: no reason given" % key)
        elif not any(p.is_file() for p in sources):
            missing.append("EXEMPT %s: no such source file" % key)
        for source in sources:
            if source.is_file() and _test_path(source).is_file():
                missing.append("EXEMPT %s: %s has a test file now (%s)" % (key, _rel(source, ROOT), _rel(_test_path(source), ROOT)))
    assert not missing, (
        "each source file of plugins/%s needs its test file (or an entry with its reason in EXEMPT of %s, if it "
        "holds no logic):\n" % ("{" + ",".join(COVERED) + "}", _rel(Path(__file__), ROOT)) + "\n".join(missing))


def test_only_test_files_and_package_markers_in_the_mirror():
    others = [_rel(p, ROOT) for p in sorted(MIRROR.rglob("*.py"))
              if not p.name.startswith("test_") and p.name != "__init__.py"]
    assert not others, "helpers belong in tests/unit/helpers, not in the mirror of plugins/:\n" + "\n".join(others)


def test_every_folder_of_the_unit_tests_is_a_package():
    """Without ``__init__.py``, plain pytest imports test files by their base name, and two ``test_rules.py``
    collide (ansible-test units names them by their path in the collection either way)."""
    folders = [UNIT] + [p for p in sorted(UNIT.rglob("*")) if p.is_dir() and p.name != "__pycache__"]
    bare = [_rel(f, ROOT) for f in folders if any(f.rglob("*.py")) and not (f / "__init__.py").is_file()]
    assert not bare, "folders of tests/unit without __init__.py:\n" + "\n".join(bare)


def test_the_package_markers_of_the_unit_tests_are_empty():
    """ansible-test sanity (empty-init) wants every ``__init__.py`` under tests/unit empty."""
    full = [_rel(p, ROOT) for p in sorted(UNIT.rglob("__init__.py")) if p.read_text().strip()]
    assert not full, "non-empty __init__.py under tests/unit:\n" + "\n".join(full)
