"""The *limit* contender of ``make bench``: the job's own stream of requests sent by a bare client, no Ansible.

A job's floor on this machine is the time the API server takes to serve the writes the job must make. This module
sends a list of requests (method, path, body, content type) over HTTPS with one persistent connection per thread
(http.client, the admin's client certificate of the control plane: the same identity as the playbooks, so the audit
log counts them alike) and ``concurrency`` requests in flight. ``sweep`` finds the concurrency that serves a stream
fastest (1 to 32); ``send`` times one stream. Nothing here decides what to send: each benchmark job builds its
stream from the same rules its module follows (benchmarks/run.py).
"""

import http.client
import json
import ssl
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlencode, urlsplit

SWEEP = (1, 2, 4, 8, 16, 32)
USER_AGENT = "calico-ops-bench-limit"


class BareClient(object):
    """One HTTPS connection per thread to the control plane's API server, as its admin."""

    def __init__(self, cp):
        url = urlsplit(cp.server)
        self.host, self.port = url.hostname, url.port or 443
        pki = cp.run_dir / "pki"
        self.ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        self.ctx.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
        self.local = threading.local()
        self.lock = threading.Lock()
        self.errors = []

    def _conn(self):
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=60)
            self.local.conn = conn
        return conn

    def request(self, method, path, body=None, content_type="application/json", accept="application/json"):
        """Send one request; return (status, decoded JSON or None). A dropped keep-alive connection is opened again
        once."""
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Accept": accept, "User-Agent": USER_AGENT}
        if data is not None:
            headers["Content-Type"] = content_type
        for attempt in (1, 2):
            conn = self._conn()
            try:
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
                return resp.status, (json.loads(raw) if raw else None)
            except (http.client.HTTPException, OSError):
                conn.close()
                self.local.conn = None
                if attempt == 2:
                    raise

    def list(self, path, page_size=500, **query):
        """Every item of a collection, following ``continue`` (one request per page)."""
        items, token = [], None
        while True:
            params = dict(query, limit=page_size)
            if token:
                params["continue"] = token
            status, page = self.request("GET", "%s?%s" % (path, urlencode(params)))
            if status != 200:
                raise RuntimeError("LIST %s: %s %s" % (path, status, page))
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items

    def send(self, stream, concurrency):
        """Send every request of ``stream`` (dicts: method, path, body, content_type, accept), ``concurrency`` at a time;
        return the wall seconds. Any status >= 300 is an error: the stream must be the job's successful writes."""
        def one(req):
            status, out = self.request(req["method"], req["path"], req.get("body"),
                                       req.get("content_type", "application/json"),
                                       req.get("accept", "application/json"))
            if status >= 300:
                with self.lock:
                    self.errors.append("%s %s: %s %s" % (req["method"], req["path"], status,
                                                         (out or {}).get("message", "")))
        start = time.monotonic()
        if concurrency <= 1:
            for req in stream:
                one(req)
        else:
            with ThreadPoolExecutor(concurrency) as pool:
                list(pool.map(one, stream))
        wall = time.monotonic() - start
        if self.errors:
            raise RuntimeError("%d request(s) of the stream failed, first: %s" % (len(self.errors), self.errors[0]))
        return wall


def sweep(run_at, levels=SWEEP):
    """``run_at(concurrency)`` -> seconds (a whole cycle of the job, from the same starting point each time) at each
    level; returns (best level, {level: seconds})."""
    times = {}
    for level in levels:
        times[level] = round(run_at(level), 3)
    best = min(times, key=lambda k: times[k])
    return best, times


def at_best(state, rep, cycle):
    """The limit contender's run ``rep`` of a job: ``cycle(prefix, concurrency)`` -> measures (``wall_s`` among them).
    Run 0 sweeps the concurrency (each level a whole cycle) and keeps the best in ``state``; later runs use it. The
    measures carry ``concurrency`` and the sweep's times (``sweep_s``)."""
    if rep == 0:
        runs = {}

        def at(level):
            runs[level] = cycle("s%d" % level, level)
            return runs[level]["wall_s"]
        state["best"], state["sweep_s"] = sweep(at)
        m = runs[state["best"]]
    else:
        m = cycle("b%d" % rep, state["best"])
    m["concurrency"] = state["best"]
    m["sweep_s"] = state["sweep_s"]
    return m
