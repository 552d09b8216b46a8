# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """How a failure names the variable to fix (calico_ops.lifecycle.variable_prefix)."""

    DOCUMENTATION = r"""
options:
  variable_prefix:
    description:
      - Put before an option's name wherever a failure names the option to fix. Empty (the default) names the
        module's own options (C(record_namespace)); the collection's roles pass the prefix of their variables (for
        example V(owner_references_)), so that the message names the role variable
        (C(owner_references_record_namespace)).
    type: str
    default: ""
"""
