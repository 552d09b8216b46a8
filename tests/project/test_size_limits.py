"""No file a reader has to scroll through (issue 41): no file of plugins/module_utils over 450 lines, no function
over 60 lines outside the tests (plugins/, benchmarks/, extensions/), counted from its ``def`` line to its last line
(docstring and comments included). A unit that grows past these is cut along its seams, not exempted here."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULE_UTILS_LINES = 450
FUNCTION_LINES = 60
CODE = ("plugins", "benchmarks", "extensions")


def python_files(*folders):
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py")
                  if "__pycache__" not in p.parts and not any(part.endswith(".egg-info") for part in p.parts))


def long_functions(path, root=ROOT):
    tree = ast.parse(path.read_text(), filename=str(path))
    return ["%s:%d %s (%d lines)" % (path.relative_to(root), node.lineno, node.name,
                                     node.end_lineno - node.lineno + 1)
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > FUNCTION_LINES]


def test_the_folders_hold_code():
    """The checks below read something: a renamed folder would make them pass on nothing."""
    assert len(python_files("plugins/module_utils")) > 50
    assert python_files("benchmarks")


def test_no_module_utils_file_over_the_limit():
    long = ["%s (%d lines)" % (p.relative_to(ROOT), n) for p in python_files("plugins/module_utils")
            for n in [len(p.read_text().splitlines())] if n > MODULE_UTILS_LINES]
    assert not long, "over %d lines, cut along the seams the file names: %s" % (MODULE_UTILS_LINES, "; ".join(long))


@pytest.mark.parametrize("folder", CODE)
def test_no_function_over_the_limit(folder):
    long = [f for p in python_files(folder) for f in long_functions(p)]
    assert not long, "functions over %d lines: %s" % (FUNCTION_LINES, "; ".join(long))


def test_the_function_check_finds_a_long_function(tmp_path):
    """The check itself: a function of 61 lines is found, one of 60 is not."""
    body = "\n".join("    x = %d" % i for i in range(FUNCTION_LINES - 1))
    (tmp_path / "m.py").write_text("def short():\n%s\n\n\ndef long():\n%s\n    x = 0\n" % (body, body))
    assert long_functions(tmp_path / "m.py", root=tmp_path) == ["m.py:%d long (61 lines)" % (FUNCTION_LINES + 3)]
