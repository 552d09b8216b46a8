"""What runs behind a test pod whose image is agnhost (``registry.k8s.io/e2e-test-images/agnhost``), and the client
the tests and the demo send requests with.

Stand-in, and why: agnhost is a Go program of k8s.io/kubernetes' test images; the part the data-plane tests use is
``agnhost netexec --http-port=P`` (an HTTP server answering ``/hostname`` with the pod's name, ``/clientip``
with the address:port the request came from, and ``/dial?host=H&port=P&request=R&protocol=http&tries=N``: N new
connections from the pod to ``http://H:P/R``, 5 s each, answered with ``{"responses": [...], "errors": [...]}`` as
agnhost's netexec does - what Kubernetes' e2e network tests and this collection's connectivity role ask through the
API server) - a few lines here, with the same paths and answers, run by the pod runner inside the pod's own network
namespace (podrunner.py), or the node's for a hostNetwork pod. The server and the client are real sockets in the
pods' namespaces: every byte goes through the veths, Felix's BPF programs and VXLAN between the nodes.

    python -m localcp.podserve netexec --http-port=8080
    python -m localcp.podserve get URL [--timeout S]     (prints the body; exit 1 with the reason on failure)
"""

from __future__ import annotations

import argparse
import http.server
import json
import socket
import sys
import urllib.error
import urllib.parse
import urllib.request

DIAL_TIMEOUT = 5.0  # seconds, agnhost's HTTP client timeout of /dial


def _dial(query: str):
    """agnhost netexec's /dial: (status, body). A name is resolved in the pod (its resolv.conf)."""
    q = urllib.parse.parse_qs(query)
    get = lambda k: (q.get(k) or [""])[0]  # noqa: E731
    host, port, request = get("host"), get("port"), get("request")
    protocol = (get("protocol") or "http").lower()
    try:
        tries = int(get("tries") or 1)
    except ValueError as exc:
        return 400, f"tries parameter is invalid. {exc}"
    if not request:
        return 400, "request parameter not specified. <nil>"
    if protocol != "http":
        return 400, f"unsupported protocol. {protocol}"  # UDP is not served by this stand-in
    try:
        socket.getaddrinfo(host, int(port), proto=socket.IPPROTO_TCP)
    except (OSError, ValueError) as exc:
        return 400, f"host and/or port param are invalid. {exc}"
    url = f"http://{host}:{port}/{request}"
    responses, errors = [], []
    for _ in range(max(tries, 0)):
        try:
            with urllib.request.urlopen(url, timeout=DIAL_TIMEOUT) as resp:
                responses.append(resp.read().decode(errors="replace"))
        except urllib.error.HTTPError as exc:  # an answer all the same (Go's client returns the body)
            responses.append(exc.read().decode(errors="replace"))
        except (urllib.error.URLError, OSError) as exc:
            errors.append(f"Get \"{url}\": {getattr(exc, 'reason', exc)}")
    out = {}
    if responses:
        out["responses"] = responses
    if errors:
        out["errors"] = errors
    return 200, json.dumps(out, separators=(",", ":"))


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        path, _, query = self.path.partition("?")
        if path == "/dial":
            status, body = _dial(query)
            if status != 200:
                self.send_error(status, body)
                return
        elif path == "/hostname":
            body = socket.gethostname()
        elif path == "/clientip":
            body = f"{self.client_address[0]}:{self.client_address[1]}"
        elif path in ("/", "/healthz"):
            body = "ok"
        else:
            self.send_error(404)
            return
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, fmt, *args):
        sys.stdout.write("%s %s\n" % (self.client_address[0], fmt % args))
        sys.stdout.flush()


def netexec(port: int) -> int:
    server = http.server.ThreadingHTTPServer(("0.0.0.0", port), _Handler)
    print(f"netexec: serving /hostname and /clientip on :{port}", flush=True)
    server.serve_forever()
    return 0


def raw_get(url: str, timeout: float, source_port: int = 0) -> tuple:
    """``(ok, error, body)`` of one new TCP connection and an HTTP/1.0 GET, read to the end (the prober's attempt
    and ``get --source-port``). ``source_port``: bind it first (SO_REUSEADDR: the port may still be held by a closed
    connection to another destination, as an ephemeral port the kernel hands out again may be)."""
    parts = urllib.parse.urlsplit(url)
    sock = socket.socket()
    try:
        sock.settimeout(timeout)
        if source_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("0.0.0.0", source_port))
        sock.connect((parts.hostname, parts.port or 80))
        sock.sendall(f"GET {parts.path or '/'} HTTP/1.0\r\nHost: {parts.hostname}\r\n\r\n".encode())
        data = b""
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError as exc:
        return False, f"{type(exc).__name__}: {exc}"[:160], ""
    finally:
        sock.close()
    head, _, body = data.partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0].decode(errors="replace")
    if " 200 " not in status + " ":
        return False, f"answer {status[:80]!r}", ""
    return True, "", body.decode(errors="replace")


def get(url: str, timeout: float, source_port: int = 0) -> int:
    if source_port:
        ok, error, body = raw_get(url, timeout, source_port)
        if not ok:
            print(f"GET {url} from port {source_port}: {error}", file=sys.stderr)
            return 1
        sys.stdout.write(body)
        return 0
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            sys.stdout.write(resp.read().decode(errors="replace"))
            return 0
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        print(f"GET {url}: {reason}", file=sys.stderr)
        return 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="localcp.podserve", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("netexec")
    p.add_argument("--http-port", type=int, default=8080)
    p.add_argument("--udp-port", type=int, default=-1)  # agnhost's flag; UDP is not served here
    g = sub.add_parser("get")
    g.add_argument("url")
    g.add_argument("--timeout", type=float, default=5.0)
    g.add_argument("--source-port", type=int, default=0)
    args = parser.parse_args(argv)
    if args.cmd == "netexec":
        return netexec(args.http_port)
    return get(args.url, args.timeout, args.source_port)


if __name__ == "__main__":
    sys.exit(main())
