"""The staff console over a project of 100,000 files: server time of the folder browser and of
the project page with its 30-day chart.

    .venv/bin/python -m bench.admin_console [--rows 100000] [--repeat 15]

Seeds a fresh project in the bench database (bench/_common.py: one INSERT ... SELECT, 10% of
the files at the root, the others in 300 folders team-<n>/year-<y>), 30 days of bandwidth
and usage snapshots, then renders each page in this process through Django's test client as
a logged-in superuser: the time is the server's (the view, its queries and the template),
no network. The project is removed at the end.

Goals: a folder opens in under 300 ms, the project page in under 500 ms (p50).
"""

from __future__ import annotations

import argparse
import time
from datetime import timedelta

from bench import _common as bench

GOALS = {"folder": 300.0, "project": 500.0}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()

    url = bench.bench_database_url()
    bench.ensure_database(url)
    bench.setup_django(url)

    from django.contrib.auth.models import User
    from django.test import Client
    from django.utils import timezone

    from accounts.models import BandwidthUsage, UsageSnapshot

    project = bench.fresh_project(url, prefix="bench-admin-console-", rows=args.rows)
    try:
        today = timezone.now().date()
        for days in range(30):
            day = today - timedelta(days=days)
            BandwidthUsage.objects.create(
                project=project, mode="test", day=day, bytes=10_000_000 * days, downloads=days
            )
            UsageSnapshot.objects.create(
                project=project, mode="test", day=day, storage_bytes=1 << 30, files=args.rows
            )
        User.objects.filter(username="bench-console").delete()
        user = User.objects.create_superuser("bench-console", "bench@example.test", "pw")
        client = Client(HTTP_HOST="127.0.0.1")
        client.force_login(user)
        browse = f"/admin/files/file/browse/{project.id}/?mode=test"
        pages = {
            "folder: root (10% of the files, 60 folders)": ("folder", browse),
            "folder: team-7 (5 folders)": ("folder", f"{browse}&path=team-7"),
            "folder: team-7/year-2023 (files)": ("folder", f"{browse}&path=team-7/year-2023"),
            "file list (changelist, newest first)": ("folder", "/admin/files/file/"),
            "project page with its chart": (
                "project",
                f"/admin/accounts/project/{project.id}/change/?mode=test",
            ),
        }
        rows = []
        for label, (goal, path) in pages.items():
            samples = []
            for _ in range(args.repeat):
                started = time.perf_counter()
                response = client.get(path)
                samples.append((time.perf_counter() - started) * 1000)
                assert response.status_code == 200, (path, response.status_code)
            p50 = bench.percentile(samples, 50)
            rows.append(
                [
                    label,
                    f"{p50:.1f}",
                    f"{bench.percentile(samples, 95):.1f}",
                    f"< {GOALS[goal]:.0f}",
                    "ok" if p50 < GOALS[goal] else "MISSED",
                ]
            )
        print(f"Staff console, {args.rows:,} files, {args.repeat} renders each (server ms)")
        print(bench.table(["page", "p50 ms", "p95 ms", "goal", ""], rows))
    finally:
        bench.delete_project(url, project.id)
        User.objects.filter(username="bench-console").delete()


if __name__ == "__main__":
    main()
