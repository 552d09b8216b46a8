# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A text file kept on the host that runs the module for review (an edited manifest): written only when its
content changes, atomically, mode 0600, never in check mode; the diff of the file for diff mode."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import tempfile


def write_file(dest, data, mode=0o600, directory_mode=0o700, move=os.rename):
    """``data`` (bytes) into ``dest`` through a temporary file in its directory (created with ``directory_mode``)
    and ``move`` (a module's ``atomic_move``, or a rename on the controller); ``mode`` whatever the umask."""
    directory = os.path.dirname(os.path.abspath(dest))
    if not os.path.isdir(directory):
        os.makedirs(directory, directory_mode)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".%s." % os.path.basename(dest))
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, mode)
        move(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    os.chmod(dest, mode)  # atomic_move applies the umask to a new file


def write_artifact(module, dest, text):
    """Write ``text`` to ``dest`` unless it holds that already (nothing in check mode). Returns
    ``(changed, diff)``; ``diff`` is the before/after of the file, for ``module._diff``."""
    before = None
    if os.path.exists(dest):
        with open(dest) as handle:
            before = handle.read()
    changed = before != text
    diff = dict(before=before or "", after=text, before_header=dest, after_header=dest)
    if changed and not module.check_mode:
        write_file(dest, text.encode("utf-8"), move=module.atomic_move)
    return changed, diff


def read_source(module):
    """The text of option ``content``, else of the file ``src`` (failing the module, naming it, when unreadable)."""
    text = module.params["content"]
    if text is None:
        error = None
        try:
            with open(module.params["src"]) as f:
                text = f.read()
        except (IOError, OSError) as exc:
            error = exc.strerror or type(exc).__name__
        if error is not None:  # failed outside the except block: no traceback in the result, even at -vvv
            module.fail_json(msg="src: cannot read %s: %s" % (module.params["src"], error))
    return text


def artifact_result(module, text, **result):
    """Write ``text`` to option ``dest`` (``write_artifact``) and return the module's result: ``result`` plus
    ``changed``, ``dest`` and, in diff mode, ``diff``."""
    changed, diff = write_artifact(module, module.params["dest"], text)
    result.update(changed=changed, dest=module.params["dest"])
    if module._diff:
        result["diff"] = diff
    return result
