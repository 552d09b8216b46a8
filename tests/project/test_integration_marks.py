"""make test selects the integration and reliability tests with ``-m integration`` (tests/run-checks.sh)."""

from pathlib import Path


def test_every_integration_and_reliability_test_file_is_marked_integration():
    """make test selects them with ``-m integration``: a file without the mark is never run (test_datastore_migration.py
    was not, from its first commit until 2026-12-06)."""
    root = Path(__file__).resolve().parents[2] / "tests"
    unmarked = [str(p.relative_to(root)) for folder in ("integration", "reliability")
                for p in sorted((root / folder).glob("test_*.py"))
                if "pytest.mark.integration" not in p.read_text()]
    assert unmarked == []


def test_every_oldest_core_test_exists():
    """tests/integration/conftest.py names the tests the oldest ansible-core runs by their ids: a renamed test would
    silently leave the oldest core with fewer jobs (the pool matches the ids exactly)."""
    import ast
    import re

    root = Path(__file__).resolve().parents[2]
    conftest = ast.parse((root / "tests/integration/conftest.py").read_text())
    ids = next(ast.literal_eval(node.value) for node in conftest.body if isinstance(node, ast.Assign)
               and any(getattr(t, "id", None) == "OLDEST_CORE_TESTS" for t in node.targets))
    assert len(ids) >= 7, ids
    missing = []
    for nodeid in ids:
        path, name = nodeid.split("::")
        function = re.sub(r"\[.*\]$", "", name)
        tree = ast.parse((root / path).read_text())
        if not any(isinstance(n, ast.FunctionDef) and n.name == function for n in tree.body):
            missing.append(nodeid)
        if "[" in name:  # a parameter id: the literal must appear in the file
            assert name[name.index("[") + 1:-1] in (root / path).read_text(), nodeid
    assert missing == []
