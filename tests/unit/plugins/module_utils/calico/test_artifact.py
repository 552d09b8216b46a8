"""calico/artifact.py: an artifact (an edited manifest kept for review) is written for its user only: mode 0600, whatever
the umask; only when it changes, never in check mode; the source read from ``content`` or ``src``."""

import os
import shutil

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.artifact import artifact_result, read_source, write_artifact, write_file


class FakeModule(object):
    check_mode = False

    @staticmethod
    def atomic_move(src, dest):
        shutil.move(src, dest)
        os.chmod(dest, 0o644)  # what AnsibleModule.atomic_move gives a new file under the usual umask


def test_an_artifact_is_0600_in_a_0700_directory(tmp_path):
    dest = tmp_path / "new" / "upgrade.yaml"
    changed, diff = write_artifact(FakeModule(), str(dest), "kind: ConfigMap\n")
    assert changed and dest.read_text() == "kind: ConfigMap\n" and diff["after"] == "kind: ConfigMap\n"
    assert oct(dest.stat().st_mode & 0o777) == "0o600"
    assert oct(dest.parent.stat().st_mode & 0o777) in ("0o700", "0o500")
    changed, _diff = write_artifact(FakeModule(), str(dest), "kind: ConfigMap\n")
    assert not changed


class Failed(Exception):
    pass


class ParamsModule(FakeModule):
    def __init__(self, check_mode=False, diff=False, **params):
        self.check_mode, self._diff, self.params = check_mode, diff, params

    def fail_json(self, msg):
        raise Failed(msg)


def test_check_mode_writes_nothing_and_still_says_what_would_change(tmp_path):
    dest = tmp_path / "upgrade.yaml"
    dest.write_text("old\n")
    changed, diff = write_artifact(ParamsModule(check_mode=True), str(dest), "new\n")
    assert changed and dest.read_text() == "old\n"
    assert diff == {"before": "old\n", "after": "new\n", "before_header": str(dest), "after_header": str(dest)}


def test_a_failed_move_leaves_no_temporary_file(tmp_path):
    def refuse(src, dest):
        raise OSError("disk full")
    dest = tmp_path / "a.yaml"
    with pytest.raises(OSError, match="disk full"):
        write_file(str(dest), b"x", move=refuse)
    assert os.listdir(str(tmp_path)) == []


def test_the_source_is_the_content_option_else_the_file_src(tmp_path):
    src = tmp_path / "in.yaml"
    src.write_text("from the file\n")
    assert read_source(ParamsModule(content="given\n", src=str(src))) == "given\n"
    assert read_source(ParamsModule(content=None, src=str(src))) == "from the file\n"
    with pytest.raises(Failed) as err:
        read_source(ParamsModule(content=None, src=str(tmp_path / "missing.yaml")))
    assert str(err.value) == "src: cannot read %s: No such file or directory" % (tmp_path / "missing.yaml")
    assert err.value.__context__ is None  # failed outside the except block: no traceback travels with it


def test_artifact_result_adds_changed_dest_and_the_diff_in_diff_mode(tmp_path):
    dest = str(tmp_path / "out.yaml")
    result = artifact_result(ParamsModule(dest=dest), "a: 1\n", documents=3)
    assert result == {"documents": 3, "changed": True, "dest": dest}
    again = artifact_result(ParamsModule(dest=dest, diff=True), "a: 1\n")
    assert again["changed"] is False and again["diff"]["before"] == again["diff"]["after"] == "a: 1\n"
