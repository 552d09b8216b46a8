"""An artifact (an edited manifest kept for review) is written for its user only: mode 0600, whatever the umask."""

import os
import shutil

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.artifact import write_artifact


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
