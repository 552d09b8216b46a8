"""The collection's benchmarks (not shipped: galaxy.yml leaves benchmarks/ out), run from the repository's root.

``make bench`` (``python -m benchmarks.run``): every job at each size, ours against the naive kubernetes.core loop,
the limit and kubectl bulk; results in benchmarks/results/results.{json,md,png}. Its parts:

* ``run.py`` - the command line: options, results.json read, merged and written, the jobs run in turn;
* ``runner.py`` - one job over its sizes: each contender's runs, the naive predictions, the row of each size;
* ``jobs/`` - one file per job (``jobs/__init__.py`` has the table ``JOBS``): the job's class, the objects it
  builds, its naive playbook, its limit and kubectl bulk contenders;
* ``harness.py`` - what every job uses: a play timed with its requests counted from the audit log, the measure of
  a run outside Ansible, the collection's own modules, the kubectl bulk scripts, the ``Job`` bases;
* ``tasks.py`` - what ansible-playbook's JSON output says of a play's tasks: their time, the waits, the profile;
* ``costs.py`` - Ansible's own cost on this machine (start-up, a task) and the floor of a run at those rates;
* ``limit.py`` - the *limit* contender: a bare HTTPS client, the concurrency sweep, ours' requests captured and
  replayed;
* ``report.py`` (the tables, the predictions, the plot) and ``render.py`` (results.md around them);
* ``kubectl_bulk/`` - the jobs scripted with kubectl alone.

The other benchmarks are one file each, with their own make target: ``footprint.py`` (make bench-footprint),
``switch.py`` (bench-switch), ``connectivity.py`` (bench-connectivity), ``fleet.py`` (bench-fleet).

Imports: ``localcp`` (tests/localcp, a development package of .venv) by its name; the jobs reuse helpers of the
integration tests (calico_support, kube_controllers, test_*), which need tests/integration on PYTHONPATH as the
make targets set it::

    PYTHONPATH=tests:tests/integration .venv/bin/python -m benchmarks.run --help
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
WORK = ROOT / "benchmarks" / "work"  # scratch files of the runs (git ignores it)
KUBECTL_BULK = ROOT / "benchmarks" / "kubectl_bulk"
