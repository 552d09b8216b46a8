# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: Calico release versions and the upgrade guards (pure Python, no API).

* ``parse_version`` reads a version a user gave (strictly ``vX.Y.Z``) and names the variable when it refuses;
  ``parse_detected`` reads one found in the cluster (an image tag, ``status.calicoVersion``), leniently.
* ``plan`` decides, before any write, what an upgrade run does: ``refuse`` (source older than the oldest
  supported release, newer than the target, an enterprise variant, unknown), ``noop`` (already at the
  target) or ``upgrade`` (``resume`` when an earlier run to the same target did not finish), and whether
  owner references must be detached and re-attached (source older than v3.28).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

STRICT = re.compile(r"^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$")
# v3.27.5, 3.27.5, v3.27.5-amd64, v3.27.5-0.dev-123-gabc (the release part is what counts)
LOOSE = re.compile(r"^v?([0-9]+)\.([0-9]+)\.([0-9]+)(?:[-+._][0-9A-Za-z.+_-]*)?$")
URL = re.compile(r"^https?://[^\s/?#]+[^\s]*$")

MINIMUM_SOURCE = "v3.15.0"
# The newest release whose files this collection's tests upgrade to; a newer target needs an explicit opt-in.
NEWEST_TESTED = "v3.31.4"
OWNER_REFERENCES_BEFORE = "v3.28.0"
OPEN_SOURCE_VARIANT = "Calico"


class VersionError(ValueError):
    """A version a user gave is not ``vX.Y.Z``."""


def parse_version(text, what="version"):
    """``vX.Y.Z`` -> ``(X, Y, Z)``; anything else (``3.31``, ``v3.31``, ``v3.31.4.1``) raises, naming ``what``."""
    match = STRICT.match(text) if isinstance(text, str) else None
    if not match:
        raise VersionError("%s must be a release version vX.Y.Z (for example v3.31.4), not %r" % (what, text))
    return tuple(int(x) for x in match.groups())


def parse_detected(text):
    """A version found in the cluster (``v3.27.5``, ``3.27.5``, ``v3.27.5-amd64``) -> tuple, or None."""
    if not isinstance(text, str):
        return None
    match = LOOSE.match(text.strip())
    if not match:
        return None
    return tuple(int(x) for x in match.groups())


def image_tag(image):
    """The tag of an image reference (``docker.io/calico/node:v3.27.5`` -> ``v3.27.5``); None for a digest-only
    or untagged reference."""
    if not isinstance(image, str) or not image:
        return None
    ref = image.split("@", 1)[0]
    last = ref.rsplit("/", 1)[-1]
    if ":" not in last:
        return None
    return last.rsplit(":", 1)[1] or None


def fmt(version):
    return "v%d.%d.%d" % tuple(version)


def compare(a, b):
    """-1, 0 or 1 as ``a`` is older than, the same as, or newer than ``b`` (tuples or strings)."""
    a = parse_detected(a) if isinstance(a, str) else tuple(a)
    b = parse_detected(b) if isinstance(b, str) else tuple(b)
    return (a > b) - (a < b)


def same_minor(a, b):
    """``v3.31.2`` and ``v3.31.4`` are both v3.31 (what ``calicoctl version`` must show: ``v3.31.x``)."""
    pa, pb = parse_detected(a), parse_detected(b)
    return bool(pa and pb and pa[:2] == pb[:2])


def version_problems(values):
    """``{variable: value}`` -> one message per value that is not ``vX.Y.Z`` (empty values are skipped)."""
    out = []
    for name in sorted(values or {}):
        value = values[name]
        if value in (None, ""):
            continue
        try:
            parse_version(value, name)
        except VersionError as exc:
            out.append(str(exc))
    return out


def url_problems(values):
    """``{variable: value or [values]}`` -> one message per value that is not an http(s) URL."""
    out = []
    for name in sorted(values or {}):
        value = values[name]
        items = value if isinstance(value, (list, tuple)) else [value]
        for index, item in enumerate(items):
            if item in (None, "") and not isinstance(value, (list, tuple)):
                continue
            label = name if not isinstance(value, (list, tuple)) else "%s[%d]" % (name, index)
            if not isinstance(item, str) or not URL.match(item):
                out.append("%s must be an http:// or https:// URL, not %r" % (label, item))
    return out


def target_problems(target, allow_untested=False, minimum=MINIMUM_SOURCE, newest_tested=NEWEST_TESTED,
                    variable="upgrade_target_version", opt_in="upgrade_allow_untested_target"):
    """Messages when the target is outside the supported range ``minimum`` .. ``newest_tested``: older is always
    refused; newer only without ``allow_untested`` (the opt-in). A target that is not ``vX.Y.Z`` is left to
    ``version_problems``."""
    try:
        target_t = parse_version(target, variable)
    except VersionError:
        return []
    low, high = parse_version(minimum, "minimum"), parse_version(newest_tested, "newest tested")
    supported = "the supported targets are %s to %s" % (fmt(low), fmt(high))
    if target_t < low:
        return ["%s %s is older than %s: %s" % (variable, fmt(target_t), fmt(low), supported)]
    if target_t > high and not allow_untested:
        return ["%s %s is newer than %s, the newest release this collection is tested with (%s); set %s: true "
                "to upgrade to it anyway (every document of the target is still dry-run server-side before the "
                "first write)" % (variable, fmt(target_t), fmt(high), supported, opt_in)]
    return []


def plan(current, target, record=None, variant=None, minimum=MINIMUM_SOURCE,
         owner_references_before=OWNER_REFERENCES_BEFORE, current_source=""):
    """What an upgrade run does, decided before any write.

    ``current``: the detected (or given) version, None when unknown; ``target``: ``vX.Y.Z``; ``record``: the
    data of the in-cluster upgrade record (``source_version``, ``target_version``, ``phase``) or None;
    ``variant``: ``Calico`` or ``TigeraSecureEnterprise`` (None: unknown, taken as Calico).

    Returns ``action`` (``refuse``, ``noop`` or ``upgrade``), ``resume``, ``reason``, ``source_version``,
    ``target_version`` and ``owner_references`` (detach before, attach after: source older than v3.28).
    """
    target_t = parse_version(target, "target version")
    minimum_t = parse_version(minimum, "minimum source version")
    owner_t = parse_version(owner_references_before, "owner references version")
    out = {"action": "refuse", "resume": False, "reason": "", "source_version": None,
           "target_version": fmt(target_t), "owner_references": False}
    where = " (%s)" % current_source if current_source else ""
    if variant and variant != OPEN_SOURCE_VARIANT:
        out["reason"] = ("the installation's variant is %s; this upgrade is for Calico open source (variant %s) "
                         "only" % (variant, OPEN_SOURCE_VARIANT))
        return out
    current_t = parse_detected(current) if isinstance(current, str) else (tuple(current) if current else None)
    if current_t is None:
        out["reason"] = ("no Calico version could be detected%s%s; set upgrade_current_version to the installed "
                         "release" % (" (found %r)" % current if current else "", where))
        return out
    out["source_version"] = fmt(current_t)
    if current_t < minimum_t:
        out["reason"] = ("Calico %s%s is older than %s, the oldest release this upgrade supports: upgrade it to "
                         "%s or later first" % (fmt(current_t), where, fmt(minimum_t), fmt(minimum_t)[:-2]))
        return out
    if current_t > target_t:
        out["reason"] = ("Calico %s%s is newer than the target %s: downgrades are not supported"
                         % (fmt(current_t), where, fmt(target_t)))
        return out
    record = record or {}
    record_source = parse_detected(record.get("source_version"))
    in_progress = (record.get("phase") not in (None, "", "done") and record_source is not None
                   and parse_detected(record.get("target_version")) == target_t)
    if in_progress:
        source_t = min(record_source, current_t)
        out.update(action="upgrade", resume=True, source_version=fmt(source_t),
                   owner_references=source_t < owner_t,
                   reason="an upgrade from %s to %s did not finish (phase %s): resuming it"
                   % (fmt(source_t), fmt(target_t), record.get("phase")))
        return out
    if current_t == target_t:
        out.update(action="noop", reason="Calico is already at %s%s: nothing to do" % (fmt(target_t), where))
        return out
    out.update(action="upgrade", owner_references=current_t < owner_t,
               reason="upgrade Calico from %s%s to %s" % (fmt(current_t), where, fmt(target_t)))
    return out
