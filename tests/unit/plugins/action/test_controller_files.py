"""The controller_files action plugin: files written on the controller only when they differ, atomically, with
their mode; nothing in check mode; diff of the changed files; bad input named before anything is written."""

import os
import stat

import pytest
from ansible.plugins.action import ActionBase

from ansible_collections.calico_ops.lifecycle.plugins.action import controller_files as plugin


class Task(object):
    def __init__(self, args):
        self.args = args


class PlayContext(object):
    def __init__(self, check_mode=False, diff=False):
        self.check_mode = check_mode
        self.diff = diff


def run(monkeypatch, check_mode=False, diff=False, **args):
    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    action = object.__new__(plugin.ActionModule)
    action._task = Task(args)
    action._play_context = PlayContext(check_mode, diff)
    return action.run(task_vars={})


def mode_of(path):
    return stat.S_IMODE(os.stat(str(path)).st_mode)


def test_writes_new_files_and_their_directory_with_private_modes(monkeypatch, tmp_path):
    target = tmp_path / "reports" / "deep"
    out = run(monkeypatch, files=[{"path": str(target / "a.json"), "content": "{}\n"},
                                  {"path": str(target / "b.md"), "content": "# B\n", "mode": "0644"}])
    assert out["changed"] and [f["changed"] for f in out["files"]] == [True, True]
    assert (target / "a.json").read_text() == "{}\n" and (target / "b.md").read_text() == "# B\n"
    assert mode_of(target / "a.json") == 0o600 and mode_of(target / "b.md") == 0o644
    assert mode_of(target) == 0o700
    assert [p.name for p in target.iterdir() if p.name.startswith(".")] == []  # no temporary file left


def test_a_second_run_changes_nothing_and_a_changed_mode_alone_is_set(monkeypatch, tmp_path):
    path = tmp_path / "a.txt"
    files = [{"path": str(path), "content": "x"}]
    run(monkeypatch, files=files)
    before = os.stat(str(path)).st_ino
    again = run(monkeypatch, files=files)
    assert again["changed"] is False and again["files"][0]["changed"] is False
    os.chmod(str(path), 0o644)
    fixed = run(monkeypatch, files=files)
    assert fixed["changed"] and mode_of(path) == 0o600
    assert os.stat(str(path)).st_ino == before  # the mode set, the file not rewritten


def test_check_mode_writes_nothing_and_diff_shows_the_change(monkeypatch, tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("old\n")
    out = run(monkeypatch, check_mode=True, diff=True, files=[{"path": str(path), "content": "new\n"},
                                                              {"path": str(tmp_path / "n" / "b"), "content": "b"}])
    assert out["changed"] and path.read_text() == "old\n" and not (tmp_path / "n").exists()
    assert out["diff"][0] == {"before_header": str(path), "after_header": str(path), "before": "old\n",
                              "after": "new\n"}
    assert out["diff"][1]["before"] == ""


def test_a_large_file_is_diffed_by_size_only(monkeypatch, tmp_path):
    big = "x" * (plugin.MAX_DIFF_BYTES + 1)
    out = run(monkeypatch, diff=True, files=[{"path": str(tmp_path / "big"), "content": big}])
    assert "prepared" in out["diff"][0] and "not shown" in out["diff"][0]["prepared"]
    assert "before" not in out["diff"][0]


@pytest.mark.parametrize("args, message", [
    ({}, "files: give a list"),
    ({"files": []}, "files: give a list"),
    ({"files": ["x"]}, "files[0]: must be a mapping"),
    ({"files": [{"content": "x"}]}, "files[0].path: required"),
    ({"files": [{"path": "/tmp/x"}]}, "files[0].content: required"),
    ({"files": [{"path": "/tmp/x", "content": "x", "mode": "rw"}]}, "files[0].mode: 'rw' is not a file mode"),
    ({"files": [{"path": "/tmp/x", "content": "x", "owner": "me"}]}, "files[0]: unknown key(s) owner"),
    ({"files": [{"path": "/tmp/x", "content": "x"}, {"path": "/tmp/x", "content": "y"}]},
     "files: /tmp/x given more than once"),
    ({"files": [{"path": "/tmp/x", "content": "x"}], "dest": "/tmp"}, "unsupported option(s) dest"),
])
def test_bad_input_is_named_and_nothing_is_written(monkeypatch, tmp_path, args, message):
    out = run(monkeypatch, **args)
    assert out["failed"] and message in out["msg"]


def test_a_file_that_cannot_be_written_fails_in_one_line(monkeypatch, tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    out = run(monkeypatch, files=[{"path": str(blocked / "a"), "content": "x"}])
    assert out["failed"] and out["msg"].startswith(str(blocked / "a") + ": cannot write:")
    assert "\n" not in out["msg"]
