"""The webhook bench's receiver, a process of its own (``python -m bench.webhooks
--serve-receiver PORT``): one asyncio loop answering HTTP/1.1 with keep-alive, recording the
arrival time of each request and the event id it carries, handed over (and forgotten) on
``GET /arrivals``."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
import urllib.request

_EVENT_ID = re.compile(rb'"id":"(evt_[0-9a-z]+)"')


async def serve_receiver(port: int) -> None:
    arrivals: list[tuple[str, str, float]] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request_line = await reader.readline()
                if not request_line:
                    return
                length = 0
                while True:
                    line = await reader.readline()
                    if line in (b"\r\n", b"\n", b""):
                        break
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                body = await reader.readexactly(length) if length else b""
                now = time.time()
                method, path, _ = request_line.decode().split(" ", 2)
                if method == "GET" and path == "/arrivals":
                    payload = json.dumps(arrivals).encode()
                    arrivals.clear()
                    writer.write(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        + f"Content-Length: {len(payload)}\r\n\r\n".encode()
                        + payload
                    )
                else:
                    found = _EVENT_ID.search(body)
                    arrivals.append((path, found.group(1).decode() if found else "", now))
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


def receiver_process(port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.webhooks", "--serve-receiver", str(port)],
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != b"ready":
        raise SystemExit("the receiver did not start")
    return proc


def arrivals(port: int) -> list[tuple[str, str, float]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/arrivals", timeout=30) as response:
        return [tuple(item) for item in json.loads(response.read())]  # type: ignore[misc]
