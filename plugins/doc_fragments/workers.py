# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """How many requests a module sends at a time (calico_ops.lifecycle.workers): the option ``workers`` of every
    module that sends many independent requests (module_utils/k8s/parallel.py). A module whose requests need more
    words (what is still done in order, when a record is saved) keeps its own description; the type, the default and
    the bounds are said here once."""

    DOCUMENTATION = r"""
options:
  workers:
    description:
      - How many requests to send at a time, 1 or more. With C(1) each is sent only after the previous one returned.
      - The results are reported in the module's own order whatever the order the requests returned in. A value
        below 1 (or not a number) is refused before any request, naming the option.
    type: int
    default: 8
"""
