"""roles/*/tasks: where a task file is imported (``import_tasks``, resolved when the play is parsed: no worker process
per include) and where it must stay included.

``import_tasks`` replaced most unconditional ``include_tasks`` (each include costs a task of its own: a forked worker
and its templating, about 0.1 s of CPU on this machine). Two places must keep ``include_tasks``:

* a file reached through an include whose path is templated (``apply_{{ _upgrade_method }}.yml``): ansible-core
  2.16, the oldest release meta/runtime.yml claims, refuses to parse an ``import_tasks`` inside it ("Error when
  evaluating variable in dynamic parent include path ... When using static imports, the parent dynamic include
  cannot utilize host facts or variables from inventory"); 2.21 accepts it, so only the oldest core's run found it;
* an include with a ``when``, a loop or an ``apply`` whose tags differ from its own: an import would evaluate the
  condition again for each task inside (after earlier tasks of the file may have changed what it reads) or give the
  file's tasks other tags."""

import re
from pathlib import Path

import yaml

ROLES = Path(__file__).resolve().parents[2] / "roles"
INCLUDE = "ansible.builtin.include_tasks"
IMPORT = "ansible.builtin.import_tasks"


def _tasks(tasks):
    for task in tasks or []:
        yield task
        for key in ("block", "rescue", "always"):
            yield from _tasks(task.get(key))


def _file_of(task, key):
    args = task[key]
    return args if isinstance(args, str) else (args or {}).get("file")


def _task_files():
    for path in sorted(ROLES.glob("*/tasks/*.yml")):
        yield path, list(_tasks(yaml.safe_load(path.read_text()) or []))


def test_no_import_inside_a_file_reached_by_a_templated_include_path():
    dynamic = set()
    for path, tasks in _task_files():
        for task in tasks:
            if INCLUDE in task and "{{" in str(_file_of(task, INCLUDE)):
                pattern = re.sub(r"\{\{.*?\}\}", "*", str(_file_of(task, INCLUDE)))
                dynamic.update(path.parent.glob(pattern))
    assert dynamic, "no include with a templated path found: the check below would check nothing"
    found = []
    for path in sorted(dynamic):
        found += ["%s: %s" % (path.relative_to(ROLES), t.get("name")) for t in _tasks(yaml.safe_load(path.read_text()))
                  if IMPORT in t]
    assert not found, "import_tasks where ansible-core 2.16 refuses it (use include_tasks): %s" % found


def test_an_import_carries_no_condition_loop_nor_apply():
    found = []
    for path, tasks in _task_files():
        for task in tasks:
            if IMPORT in task and (set(task) & {"when", "loop", "with_items", "loop_control"}
                                   or isinstance(task[IMPORT], dict) and "apply" in task[IMPORT]):
                found.append("%s: %s" % (path.relative_to(ROLES), task.get("name")))
    assert not found, found
