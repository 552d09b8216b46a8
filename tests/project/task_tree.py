"""The playbooks' and roles' task files, and every play, block and task in them: what the project tests that read
task YAML walk (test_connection_settings.py, test_waits.py)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(list((ROOT / "playbooks").glob("*.yml")) + list((ROOT / "roles").glob("*/tasks/*.yml")))


def entries(node):
    """Every play, block and task (a mapping with a keyword) under ``node``."""
    if isinstance(node, list):
        for item in node:
            yield from entries(item)
    elif isinstance(node, dict):
        yield node
        for key in ("tasks", "pre_tasks", "post_tasks", "handlers", "block", "rescue", "always"):
            yield from entries(node.get(key))
