# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """The wait options: poll until ready, with a timeout (calico_ops.lifecycle.wait)."""

    DOCUMENTATION = r"""
options:
  wait:
    description: Poll until ready or O(wait_timeout).
    type: bool
    default: false
  wait_timeout:
    description: Seconds to wait when O(wait=true).
    type: int
    default: 600
  poll_interval:
    description: Seconds between polls when O(wait=true).
    type: int
    default: 10
"""
