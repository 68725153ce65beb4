"""Supabase Storage, the server a user would pick instead of this one, as the throughput
benches measure it beside ours: its address and service key, a bucket seeded through its own
API, and the CPU of a server the bench did not start."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from bench import _common as bench

PEER_FOLDER = "bench/list"
PEER_OBJECTS = 100


@dataclass
class Peer:
    """Supabase Storage at ``url``, with its service key: the server a user would pick instead
    of this one. It runs elsewhere; the bench only takes its address and key, and seeds it
    through its own API."""

    url: str
    key: str
    bucket: str
    pid: int | None = None  # its process, when it runs on this machine and can be seen

    def call(
        self, method: str, path: str, body: bytes | None = None, **headers: str
    ) -> tuple[int, Any]:
        request = urllib.request.Request(
            self.url + path,
            data=body,
            method=method,
            headers={"Authorization": f"Bearer {self.key}", **headers},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")[:300]
        except OSError as error:
            raise SystemExit(f"the peer at {self.url} does not answer: {error}") from error

    def expect(self, what: str, answer: tuple[int, Any]) -> Any:
        status, body = answer
        if status != 200:
            raise SystemExit(f"the peer answered {what} with {status}: {body}")
        return body

    def seed(self) -> str:
        """The bucket, with PEER_OBJECTS small objects in PEER_FOLDER (overwritten if there):
        the path of the one the GET reads."""
        if self.call("GET", f"/bucket/{self.bucket}")[0] != 200:
            bucket = {"id": self.bucket, "name": self.bucket, "public": False}
            self.expect(
                "the bucket's creation",
                self.call(
                    "POST",
                    "/bucket",
                    json.dumps(bucket).encode(),
                    **{"Content-Type": "application/json"},
                ),
            )
        for number in range(1, PEER_OBJECTS + 1):
            self.expect(
                "an object's upload",
                self.call(
                    "POST",
                    f"/object/{self.bucket}/{PEER_FOLDER}/file-{number:03d}.txt",
                    f"bench object {number}\n".encode(),
                    **{"Content-Type": "text/plain", "x-upsert": "true"},
                ),
            )
        return f"{PEER_FOLDER}/file-001.txt"

    def check(self, path: str) -> None:
        """Each measured request answers 200 once, and the list a full page of 20."""
        self.expect("the object info", self.call("GET", self.info_path(path)))
        listed = self.expect(
            "the list",
            self.call(
                "POST",
                f"/object/list/{self.bucket}",
                json.dumps({"prefix": PEER_FOLDER, "limit": 20}).encode(),
                **{"Content-Type": "application/json"},
            ),
        )
        if len(listed) != 20:
            raise SystemExit(f"the peer listed {len(listed)} objects, not 20")
        self.expect(
            "the upload signing",
            self.call("POST", f"/object/upload/sign/{self.bucket}/bench/upload/check.png"),
        )

    def info_path(self, path: str) -> str:
        return f"/object/info/authenticated/{self.bucket}/{path}"


@dataclass
class Remote:
    """A server this bench did not start, at ``base_url``. Its CPU is counted where the API server's
    is for ours when its process can be found (the one listening on its port, on this
    machine); else it is in 'other'."""

    base_url: str
    pid: int | None = None

    def cpu(self) -> bench.CpuTimes:
        times = bench.cpu_times(-1)  # no process group is -1: only PostgreSQL and the machine
        if self.pid is None:
            return times
        return bench.CpuTimes(
            bench.process_cpu(self.pid), times.postgres, times.machine, times.postgres_by_pid
        )
