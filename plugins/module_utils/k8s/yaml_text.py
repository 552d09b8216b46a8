# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes layer: YAML text read with PyYAML's C loader (libyaml) when PyYAML has it.

Calico's operator-crds.yaml is 2.6 MB: the pure-Python safe loader takes about 2 s to read it on a 2-CPU machine,
the C loader a tenth of that (benchmarks/results/design-measurements.md). Both
build the same plain objects (the safe constructor and resolver of YAML 1.1); the pure-Python loader is used where
PyYAML was built without libyaml. Only reading changes: text this collection writes back (an edited document) keeps
``yaml.safe_dump``'s layout.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

try:
    import yaml
    HAS_YAML = True
    SAFE_LOADER = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
    YAMLError = yaml.YAMLError
except ImportError:  # pragma: no cover - modules report it with missing_required_lib
    HAS_YAML = False
    SAFE_LOADER = None

    class YAMLError(Exception):
        """Stands for yaml.YAMLError where PyYAML is missing (nothing can raise it then)."""


def load(text):
    """One YAML document (text or an open file) as plain objects."""
    return yaml.load(text, Loader=SAFE_LOADER)  # nosec B506 - a safe loader (C or Python)


def load_all(text):
    """Every document of a multi-document YAML text, as plain objects (``None`` for an empty document)."""
    return list(yaml.load_all(text, Loader=SAFE_LOADER))  # nosec B506 - a safe loader (C or Python)


def documents(definition):
    """The non-empty documents of a module's manifest option: a list of dicts, one dict, or multi-document YAML
    text (parsed here, in the module: a role that passes the release file's text instead of its parsed documents
    spares Ansible templating and copying megabytes of nested objects per task)."""
    if isinstance(definition, str):
        return [d for d in load_all(definition) if d]
    if isinstance(definition, dict):
        return [definition]
    return [d for d in definition or [] if d]
