# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for calico_ops.lifecycle.controller_files: text files written on the controller, in its own
process (no module is sent anywhere), several in one task.

A role that keeps a downloaded manifest and writes two reports used a ``file`` task for the directory and a
``copy`` task per file (``copy`` runs ``stat`` and then ``copy``: two module runs a file). Here each file is
compared with what is on disk and written only when it differs, atomically (a temporary file in the same
directory, then a rename), with its mode (default 0600) and its directory created 0700; check mode writes nothing
(unless the task says ``check_mode: false``); diff mode shows each changed file (a file over 100 KB by size only).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.module_utils.common.text.converters import to_bytes, to_text
from ansible.plugins.action import ActionBase

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.artifact import write_file

MAX_DIFF_BYTES = 100 * 1024
_FILE_KEYS = ("path", "content", "mode")


def _mode(value, where):
    """An octal mode (``"0600"``, ``0o600``, ``384``) as an int, or a message naming ``where``."""
    if isinstance(value, bool):
        return None, "%s: %r is not a file mode; give an octal string such as '0600'" % (where, value)
    if isinstance(value, int):
        return value, None
    try:
        return int(str(value), 8), None
    except ValueError:
        return None, "%s: %r is not a file mode; give an octal string such as '0600'" % (where, value)


def problems(args):
    """Every problem of the task's arguments (named by option), before anything is written."""
    out = []
    unknown = sorted(set(args) - set(("files", "directory_mode")))
    if unknown:
        out.append("unsupported option(s) %s; allowed: files, directory_mode" % ", ".join(unknown))
    files = args.get("files")
    if not isinstance(files, list) or not files:
        out.append("files: give a list of {path, content, mode} (at least one)")
        files = []
    for i, entry in enumerate(files):
        where = "files[%d]" % i
        if not isinstance(entry, dict):
            out.append("%s: must be a mapping with path and content" % where)
            continue
        extra = sorted(set(entry) - set(_FILE_KEYS))
        if extra:
            out.append("%s: unknown key(s) %s; allowed: %s" % (where, ", ".join(extra), ", ".join(_FILE_KEYS)))
        if not isinstance(entry.get("path"), str) or not entry.get("path"):
            out.append("%s.path: required, a file path on the controller" % where)
        if not isinstance(entry.get("content"), str):
            out.append("%s.content: required, the file's text" % where)
        if "mode" in entry:
            out.extend(p for p in [_mode(entry["mode"], where + ".mode")[1]] if p)
    if "directory_mode" in args:
        out.extend(p for p in [_mode(args["directory_mode"], "directory_mode")[1]] if p)
    paths = [os.path.abspath(os.path.expanduser(e["path"])) for e in files
             if isinstance(e, dict) and isinstance(e.get("path"), str) and e.get("path")]
    twice = sorted(set(p for p in paths if paths.count(p) > 1))
    if twice:
        out.append("files: %s given more than once" % ", ".join(twice))
    return out


def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except (IOError, OSError):
        return None


class ActionModule(ActionBase):
    """Write the task's files on the controller."""

    TRANSFERS_FILES = False
    _VALID_ARGS = None  # checked by problems(), which names the allowed options and every other problem at once

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(self._task.args)
        found = problems(args)
        if found:
            return dict(result, failed=True, msg="; ".join(found))
        directory_mode = _mode(args.get("directory_mode", "0700"), "directory_mode")[0]
        check = bool(self._play_context.check_mode)
        report, diffs, changed = [], [], False
        for entry in args["files"]:
            path = os.path.abspath(os.path.expanduser(entry["path"]))
            mode = _mode(entry.get("mode", "0600"), "mode")[0]
            data = to_bytes(entry["content"], errors="surrogate_or_strict")
            before = _read(path)
            differs = before != data
            try:
                mode_differs = before is not None and (os.stat(path).st_mode & 0o7777) != mode
            except OSError:
                mode_differs = True
            item = {"path": path, "changed": differs or mode_differs, "size": len(data)}
            if item["changed"]:
                changed = True
                if not check:
                    error = None
                    try:
                        if differs:
                            write_file(path, data, mode, directory_mode)  # os.rename: on the controller
                        else:
                            os.chmod(path, mode)
                    except (IOError, OSError) as exc:
                        error = "%s: cannot write: %s" % (path, exc.strerror or type(exc).__name__)
                    if error is not None:  # outside the except block: no traceback in the result
                        return dict(result, failed=True, msg=error, files=report)
                if self._play_context.diff and differs:
                    diffs.append(self._diff(path, before, data))
            report.append(item)
        result.update(changed=changed, files=report)
        if diffs:
            result["diff"] = diffs
        return result

    @staticmethod
    def _diff(path, before, after):
        if max(len(before or b""), len(after)) > MAX_DIFF_BYTES:
            return {"before_header": path, "after_header": path,
                    "prepared": "%s: %s -> %d bytes (over %d KB: not shown)" % (
                        path, "absent" if before is None else "%d bytes" % len(before), len(after),
                        MAX_DIFF_BYTES // 1024)}
        return {"before_header": path, "after_header": path, "before": to_text(before or b""),
                "after": to_text(after)}
