"""A TCP forwarder: ``python -m localcp.forward --listen 10.250.N.1:PORT --to 127.0.0.1:PORT``.

kube-apiserver listens on 127.0.0.1 only; the kubeadm shape (shapes.py) gives it a node-network address as well,
the way a kubeadm control plane answers on its node IP. Bytes are copied both ways, nothing is read.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys


async def _pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        try:
            writer.close()
        except OSError:
            pass


async def _serve(listen_host, listen_port, to_host, to_port):
    async def handle(reader, writer):
        try:
            up_reader, up_writer = await asyncio.open_connection(to_host, to_port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    server = await asyncio.start_server(handle, listen_host, listen_port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="localcp.forward", description=__doc__)
    parser.add_argument("--listen", required=True)
    parser.add_argument("--to", required=True)
    args = parser.parse_args(argv)
    lh, lp = args.listen.rsplit(":", 1)
    th, tp = args.to.rsplit(":", 1)
    asyncio.run(_serve(lh, int(lp), th, int(tp)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
