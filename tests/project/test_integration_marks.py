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
