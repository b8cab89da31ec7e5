"""A TCP round-robin on loopback in front of webhook replicas, as a Service's endpoints spread the API server's
connections: each new connection goes to the next backend, bytes are spliced untouched (TLS end to end).

python -m tests.cluster.roundrobin --listen PORT --backend 127.0.0.1:P1 --backend 127.0.0.1:P2"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def serve(listen: int, backends: list[tuple[str, int]]) -> None:
    turn = itertools.cycle(backends)

    async def connect(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        # a backend that is down is skipped, as a Service skips endpoints that are not ready
        for _ in backends:
            host, port = next(turn)
            try:
                backend_reader, backend_writer = await asyncio.open_connection(host, port)
            except OSError:
                continue
            await asyncio.gather(_pipe(client_reader, backend_writer), _pipe(backend_reader, client_writer))
            return
        client_writer.close()

    server = await asyncio.start_server(connect, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.cluster.roundrobin")
    parser.add_argument("--listen", type=int, required=True)
    parser.add_argument("--backend", action="append", required=True, help="HOST:PORT, repeatable")
    args = parser.parse_args(argv)
    backends = [(b.rpartition(":")[0], int(b.rpartition(":")[2])) for b in args.backend]
    try:
        asyncio.run(serve(args.listen, backends))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
