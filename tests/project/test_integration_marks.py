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



def test_the_oldest_core_runs_each_main_job():
    """make test runs the tests marked ``oldest_core`` on ansible-core 2.16 (tests/integration/conftest.py): each main
    job keeps at least one (issue 35: preflight, install_ebpf, the upgrade of each install method, owner_references)."""
    root = Path(__file__).resolve().parents[2] / "tests" / "integration"
    marked = {name: (root / name).read_text().count("pytest.mark.oldest_core") for name in (
        "test_preflight.py", "test_install_ebpf.py", "test_upgrade.py", "test_owner_references.py")}
    assert all(marked.values()) and marked["test_upgrade.py"] >= 3, marked
