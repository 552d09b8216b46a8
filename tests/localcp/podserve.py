"""What runs behind a test pod whose image is agnhost (``registry.k8s.io/e2e-test-images/agnhost``), and the client
the tests and the demo send requests with.

Stand-in, and why: agnhost is a Go program of k8s.io/kubernetes' test images; the part the data-plane tests use is
``agnhost netexec --http-port=P`` (an HTTP server answering ``/hostname`` with the pod's name and ``/clientip``
with the address:port the request came from) - a few lines here, with the same paths and answers, run by the pod
runner inside the pod's own network namespace (podrunner.py). The server and the client are real sockets in the
pods' namespaces: every byte goes through the veths, Felix's BPF programs and VXLAN between the nodes.

    python -m localcp.podserve netexec --http-port=8080
    python -m localcp.podserve get URL [--timeout S]     (prints the body; exit 1 with the reason on failure)
"""

from __future__ import annotations

import argparse
import http.server
import socket
import sys
import urllib.error
import urllib.request


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        path = self.path.split("?", 1)[0]
        if path == "/hostname":
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


def get(url: str, timeout: float) -> int:
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
    args = parser.parse_args(argv)
    if args.cmd == "netexec":
        return netexec(args.http_port)
    return get(args.url, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
