# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """How much of a bulk job's per-object account the result lists (calico_ops.lifecycle.report)."""

    DOCUMENTATION = r"""
options:
  report_limit:
    description:
      - The most objects each of the result's per-object lists holds (the first ones, in the job's order). Every
        object is counted in the result's C(counts) and kept with its outcome in the record; the result's
        C(not_listed) says how many each list left out. Failures, conflicts and missing owners are always listed
        in full.
      - A list of every object costs about 400 bytes an object that Ansible decodes and keeps for the run, and AWX
        in each job event (2 MB at 5,000 objects).
      - V(0) lists none. A whole number, 0 or more.
    type: int
    default: 100
"""
