# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes layer's errors: a failed API request (``ClientError``, with the HTTP status) and the
check-mode guard's refusal of a write (``ReadOnlyViolation``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ClientError(Exception):
    """An API request failed; ``status`` is the HTTP status (0 when the server was not reached)."""

    def __init__(self, message, status=0, reason="", body=None):
        super(ClientError, self).__init__(message)
        self.status = status
        self.reason = reason
        self.body = body


class ReadOnlyViolation(ClientError):
    """A mutating request was attempted by a read-only (check mode) client."""
