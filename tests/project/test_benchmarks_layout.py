"""The layout of benchmarks/ (issue 41): a package whose every module imports cleanly (nothing runs at import), and
one file per job of ``make bench``'s table (benchmarks/jobs/<job>.py, the job's class defined there)."""

import importlib
import pkgutil
from pathlib import Path

import benchmarks

ROOT = Path(__file__).resolve().parents[2]

JOBS_DIR = ROOT / "benchmarks" / "jobs"


def _integration_helpers_importable(monkeypatch):
    """The jobs reuse helpers of the integration tests: tests/integration on sys.path, as make bench sets it."""
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "integration"))


def test_every_module_of_the_package_imports(monkeypatch):
    _integration_helpers_importable(monkeypatch)
    names = [m.name for m in pkgutil.walk_packages(benchmarks.__path__, "benchmarks.")]
    assert {"benchmarks.run", "benchmarks.harness", "benchmarks.jobs"} <= set(names), names
    for name in names:
        module = importlib.import_module(name)
        assert (module.__doc__ or "").strip(), "%s has no module docstring" % name


def test_each_job_of_the_command_line_has_its_file_in_jobs(monkeypatch):
    _integration_helpers_importable(monkeypatch)
    run = importlib.import_module("benchmarks.run")
    report = importlib.import_module("benchmarks.report")
    assert run.JOBS, "the command line's job table is empty"
    for name, job in run.JOBS.items():
        assert (JOBS_DIR / (name + ".py")).is_file(), "benchmarks/jobs/%s.py is missing" % name
        assert job.__module__ == "benchmarks.jobs." + name, (name, job.__module__)
    files = set(p.stem for p in JOBS_DIR.glob("*.py")) - {"__init__"}
    assert files == set(run.JOBS), "a file of benchmarks/jobs/ that is no job of the table: %s" % (files - set(run.JOBS))
    assert tuple(run.JOBS) == report.JOB_ORDER  # the tables list the jobs in the order they run


def test_a_job_offers_only_its_own_other_contenders(monkeypatch):
    """limit and kubectl run where the job defines them for itself: a job built on install_ebpf's starting state
    must not inherit install_ebpf's replay or its kubectl script (they would be measured under the other job's name)."""
    _integration_helpers_importable(monkeypatch)
    run = importlib.import_module("benchmarks.run")
    runner = importlib.import_module("benchmarks.runner")
    offered = dict((name, sorted(c for c in runner.OTHER_CONTENDERS if hasattr(job, c))) for name, job in run.JOBS.items())
    assert offered == {"preflight": ["kubectl", "limit"], "owner_references": ["kubectl", "limit"],
                       "host_endpoint_migration": ["kubectl", "limit"], "install_ebpf": ["kubectl", "limit"],
                       "upgrade": ["kubectl", "limit"], "datastore_migration": [], "operator_migration": [],
                       "disable_ebpf": []}
