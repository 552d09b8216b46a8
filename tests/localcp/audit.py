"""Read the API server's audit log: which requests a step made, and which of them wrote."""

from __future__ import annotations

import json
import time
from pathlib import Path

WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection"}
READ_VERBS = {"get", "list"}
DEFAULT_USERS = ("admin",)  # the identity of the admin kubeconfig that tests and playbooks use


class AuditLog:
    def __init__(self, path: Path):
        self.path = Path(path)

    def settle(self, quiet: float = 0.3, timeout: float = 5) -> None:
        """Wait until the log stops growing (events are written as responses complete)."""
        deadline = time.monotonic() + timeout
        size = -1
        while time.monotonic() < deadline:
            now = self.path.stat().st_size if self.path.exists() else 0
            if now == size:
                return
            size = now
            time.sleep(quiet)

    def mark(self) -> int:
        """A position in the log; pass it to events_since / writes_since."""
        self.settle()
        return self.path.stat().st_size if self.path.exists() else 0

    def events_since(self, mark: int = 0, users=DEFAULT_USERS) -> list:
        self.settle()
        events = []
        with open(self.path, "rb") as f:
            size = f.seek(0, 2)
            if size < mark:
                # the log was rotated or truncated since the mark: reading on would find nothing, and "no writes"
                # would pass a check it never made
                raise RuntimeError("audit log %s is %d bytes, shorter than the mark %d: rotated or truncated since "
                                   "the mark, its events cannot be read" % (self.path, size, mark))
            f.seek(mark)
            for raw in f:
                try:
                    ev = json.loads(raw)
                except ValueError:
                    continue
                if ev.get("stage") != "ResponseComplete":
                    continue
                if users is not None and (ev.get("user") or {}).get("username") not in users:
                    continue
                events.append(ev)
        return events

    def writes_since(self, mark: int = 0, users=DEFAULT_USERS, include_dry_run: bool = False) -> list:
        """Mutating requests (attempted writes); server-side dry-run requests persist nothing and are
        left out unless asked for."""
        out = []
        for ev in self.events_since(mark, users):
            if ev.get("verb") not in WRITE_VERBS:
                continue
            if not include_dry_run and "dryRun=" in (ev.get("requestURI") or ""):
                continue
            out.append(ev)
        return out

    def reads_since(self, mark: int = 0, users=DEFAULT_USERS) -> list:
        return [ev for ev in self.events_since(mark, users) if ev.get("verb") in READ_VERBS]


def describe(ev: dict) -> str:
    ref = ev.get("objectRef") or {}
    where = "/".join(x for x in (ref.get("apiGroup") or "core", ref.get("resource"), ref.get("namespace"),
                                 ref.get("name")) if x)
    sub = ref.get("subresource")
    code = (ev.get("responseStatus") or {}).get("code")
    return f"{ev.get('verb')} {where}{'/' + sub if sub else ''} -> {code}"
