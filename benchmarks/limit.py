"""The *limit* contender of ``make bench``: the job's own stream of requests sent by a bare client, no Ansible.

A job's floor on this machine is the time the API server takes to serve the writes the job must make. This module
sends a list of requests (method, path, body, content type) over HTTPS with one persistent connection per thread
(http.client, the admin's client certificate of the control plane: the same identity as the playbooks, so the audit
log counts them alike) and ``concurrency`` requests in flight. ``sweep`` finds the concurrency that serves a stream
fastest (1 to 32); ``send`` times one stream. Nothing here decides what to send: each benchmark job builds its
stream from the same rules its module follows (benchmarks/jobs/).
"""

import http.client
import json
import ssl
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlencode, urlsplit

from localcp.audit import WRITE_VERBS

SWEEP = (1, 2, 4, 8, 16, 32)
USER_AGENT = "calico-ops-bench-limit"


def _decoded(raw):
    """An answer's JSON, or its text in ``text`` when it is not JSON (a replayed read of a non-JSON endpoint)."""
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return {"text": raw.decode("utf-8", "replace")}


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
                return resp.status, _decoded(raw)
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


# -- a job replayed from its own requests (install_ebpf, upgrade) ----------------------------------------------------
# A job whose writes are documents (server-side applies of release files, patches, records) has no stream to build
# from rules alone: the stream is ours' own, captured. Ours runs once, untimed, as the control plane's capture user
# (localcp CAPTURE_USER: its writes are in the audit log with their bodies, never a Secret's), and the limit sends
# the same requests - method, path and query as ours sent them, the same bodies - as the admin, from the same
# starting state. What the replay must change to be sent again is counted (``rewritten``): a resourceVersion or uid
# precondition names the captured object, not the one of the replay's state, and is left out (the request costs the
# server the same); a LIST's later pages are fetched with the replay's own ``continue`` tokens.

VERB_METHODS = {"get": "GET", "list": "GET", "create": "POST", "update": "PUT", "patch": "PATCH", "delete": "DELETE",
                "deletecollection": "DELETE"}
CRD_GROUP = "apiextensions.k8s.io"


def epoch(text):
    """An ISO 8601 UTC timestamp (the audit log's, the JSON callback's; microseconds at most) as epoch seconds."""
    from datetime import datetime, timezone
    return datetime.fromisoformat(text.rstrip("Z")[:26]).replace(tzinfo=timezone.utc).timestamp()


def _patch_type(ev, merge_type):
    """The content type of a captured PATCH (the audit log keeps the body, not its type): a list is a JSON patch, an
    object with apiVersion and kind a server-side apply, anything else a merge patch of the type
    ``merge_type(api_version)`` gives (the collection's merge_patch rule for ``auto``: harness.merge_type)."""
    body = ev.get("requestObject")
    if isinstance(body, list):
        return "application/json-patch+json"
    if isinstance(body, dict) and body.get("apiVersion") and body.get("kind"):
        return "application/apply-patch+yaml"
    ref = ev.get("objectRef") or {}
    return merge_type("/".join(x for x in (ref.get("apiGroup"), ref.get("apiVersion")) if x))


def _without_preconditions(verb, body):
    """``(body, rewritten)``: the body without what names the captured object (a resourceVersion or uid that the
    replay's object does not have)."""
    if verb == "update" and isinstance(body, dict):
        meta = dict(body.get("metadata") or {})
        if meta.pop("resourceVersion", None) is not None or meta.pop("uid", None) is not None:
            meta.pop("uid", None)
            return dict(body, metadata=meta), True
    if verb == "patch" and isinstance(body, list):
        preconditions = ("/metadata/resourceVersion", "/metadata/uid")
        kept = [op for op in body if not (op.get("op") == "test" and op.get("path") in preconditions)]
        return kept, len(kept) != len(body)
    if verb in ("delete", "deletecollection") and isinstance(body, dict) and body.get("preconditions"):
        return dict((k, v) for k, v in body.items() if k != "preconditions"), True
    return body, False


def captured_stream(events, merge_type, skip_windows=()):
    """ours' requests of a capture run (audit events of the capture user, in the order they were received) as a
    replay stream: dicts of ``method``, ``path`` (ours' path and query), ``body``, ``content_type``, ``write`` (a
    persisted write; dry runs are not), ``resource``/``group``/``namespace``/``name``, ``code`` (ours' answer).
    Left out: requests received inside ``skip_windows`` ((start, end) epoch seconds: ours' waits, whose time is
    subtracted from ours too) and the later pages of a LIST (the replay follows its own). Returns (stream,
    rewritten count); a write without a captured body (a Secret, never logged with its body) raises."""
    stream, rewritten = [], 0
    for ev in sorted(events, key=lambda e: e.get("requestReceivedTimestamp") or ""):
        verb, uri = ev.get("verb"), ev.get("requestURI") or ""
        if verb not in VERB_METHODS:
            continue
        at = epoch(ev["requestReceivedTimestamp"])
        if any(start <= at <= end for start, end in skip_windows):
            continue
        if verb == "list" and "continue=" in uri:
            continue
        ref = ev.get("objectRef") or {}
        body = ev.get("requestObject")
        if verb in ("create", "update", "patch") and body is None:
            raise RuntimeError("captured %s %s has no body (a Secret's is never logged): it cannot be replayed"
                               % (verb, uri))
        body, changed = _without_preconditions(verb, body)
        rewritten += changed
        stream.append({"method": VERB_METHODS[verb], "path": uri, "body": body,
                       "content_type": _patch_type(ev, merge_type) if verb == "patch" else "application/json",
                       "write": verb in WRITE_VERBS and "dryRun=" not in uri, "verb": verb,
                       "resource": ref.get("resource"), "group": ref.get("apiGroup") or "",
                       "namespace": ref.get("namespace"), "name": ref.get("name"),
                       "code": (ev.get("responseStatus") or {}).get("code") or 0})
    return stream, rewritten


def waves(stream):
    """The stream cut into waves a replay may send concurrently, in ours' order: a wave is a run of reads (dry runs
    included) or of writes, and a write starts a new wave when an earlier write of its wave created what it needs
    (its namespace, the CRD of its type) or wrote the same object. Returns [(needs_crds, requests)]: the CRD names a
    wave needs Established first (written by an earlier wave)."""
    out, cur, cur_write, touched, crds_written = [], [], None, set(), set()
    for req in stream:
        key = (req["resource"], req["namespace"], req["name"])
        crd = "%s.%s" % (req["resource"], req["group"]) if req["group"] else None
        depends = req["write"] and (key in touched or ("namespaces", None, req["namespace"]) in touched
                                    or ("customresourcedefinitions", None, crd) in touched)
        if cur and (req["write"] != cur_write or depends):
            out.append(cur)
            cur, touched = [], set()
        cur.append(req)
        cur_write = req["write"]
        if req["write"]:
            touched.add(key)
    if cur:
        out.append(cur)
    result = []
    for wave in out:
        needs = sorted(set("%s.%s" % (r["resource"], r["group"]) for r in wave if r["group"]
                           and "%s.%s" % (r["resource"], r["group"]) in crds_written))
        result.append((needs, wave))
        crds_written |= set(r["name"] for r in wave if r["write"] and r["resource"] == "customresourcedefinitions"
                            and r["group"] == CRD_GROUP)
    return result


def replay(client, stream, concurrency, timeout=120):
    """Send a captured ``stream`` wave by wave (``waves``), ``concurrency`` requests in flight within a wave; before a
    wave that needs CRDs, poll them (GET, every 0.1 s) until Established - that time is the wait, subtracted as
    ours' is. Every write's answer must be of ours' kind (success where ours succeeded, a refusal where ours was
    refused; a dry run too);
    a LIST whose page ends in a ``continue`` token is followed. A read may be answered otherwise than ours was (an
    object a controller - the operator - had or had not created yet at that moment): such reads are returned, not
    refused. Returns (wall seconds, wait seconds, reads answered unlike ours')."""
    mismatches, reads_unlike = [], []
    lock = threading.Lock()

    def one(req):
        status, out = client.request(req["method"], req["path"], req["body"], req["content_type"])
        while req["verb"] == "list" and status == 200 and ((out or {}).get("metadata") or {}).get("continue"):
            sep = "&" if "?" in req["path"] else "?"
            status, out = client.request("GET", req["path"] + sep + urlencode(
                {"continue": out["metadata"]["continue"]}))
        if (status < 300) != (req["code"] < 300):
            with lock:
                if req["verb"] in ("get", "list"):  # what controllers wrote meanwhile (the operator's objects)
                    reads_unlike.append("%s %s: %s, ours had %s" % (req["method"], req["path"], status, req["code"]))
                    return
                mismatches.append("%s %s: %s, ours had %s (%s)" % (req["method"], req["path"], status, req["code"],
                                                                   (out or {}).get("message", "")))

    established = set()
    waited = 0.0
    start = time.monotonic()
    with ThreadPoolExecutor(max(1, concurrency)) as pool:
        for needs, wave in waves(stream):
            pending = [n for n in needs if n not in established]
            if pending:
                began = time.monotonic()
                deadline = began + timeout
                while pending:
                    for name in list(pending):
                        status, crd = client.request(
                            "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + name)
                        if status == 200 and any(c.get("type") == "Established" and c.get("status") == "True"
                                                 for c in (crd.get("status") or {}).get("conditions") or []):
                            pending.remove(name)
                            established.add(name)
                    if pending:
                        if time.monotonic() > deadline:
                            raise RuntimeError("CRDs not Established after %ss: %s" % (timeout, pending))
                        time.sleep(0.1)
                waited += time.monotonic() - began
            if concurrency <= 1 or len(wave) == 1:
                for req in wave:
                    one(req)
            else:
                list(pool.map(one, wave))
    wall = time.monotonic() - start
    if mismatches:
        raise RuntimeError("%d replayed request(s) answered unlike ours', first: %s" % (len(mismatches),
                                                                                        mismatches[0]))
    return wall, waited, reads_unlike
