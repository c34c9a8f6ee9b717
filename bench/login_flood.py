"""Login flood: N parallel wrong-password logins from one address, for the owner's
account, against a real ``hubbub serve``, while another client keeps asking
``GET /users/me``.

Reports the other client's latency (median, p99, worst) during the flood, how the flood's
requests were answered, and the server's resident memory before and at its peak.

    .venv/bin/python bench/login_flood.py --logins 120
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.e2e.conftest import serving


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def flood(url: str, owner: tuple[str, str], pid: int, logins: int) -> None:
    limits = httpx.Limits(max_connections=logins + 10)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as http:
        await http.get("/api/v1/users/me", auth=owner)
        before = rss_mib(pid)
        peak = before
        latencies: list[float] = []
        done = asyncio.Event()

        async def other_user() -> None:
            nonlocal peak
            while not done.is_set():
                start = time.perf_counter()
                response = await http.get("/api/v1/users/me", auth=owner)
                assert response.status_code == 200, response.text
                latencies.append(time.perf_counter() - start)
                peak = max(peak, rss_mib(pid))
                await asyncio.sleep(0.02)

        async def login(n: int) -> int:
            response = await http.post(
                "/api/v1/fetch_api_key",
                data={"username": owner[0], "password": f"wrong{n}"},
            )
            return response.status_code

        watcher = asyncio.create_task(other_user())
        start = time.perf_counter()
        statuses = await asyncio.gather(*(login(n) for n in range(logins)))
        took = time.perf_counter() - start
        await asyncio.sleep(0.2)
        done.set()
        await watcher
    latencies.sort()
    answered = {code: statuses.count(code) for code in sorted(set(statuses))}
    print(f"{logins} wrong-password logins answered in {took:.2f} s: {answered}")
    print(
        f"other client's GET /users/me during the flood ({len(latencies)} requests): "
        f"median {statistics.median(latencies) * 1000:.1f} ms, "
        f"p99 {latencies[int(len(latencies) * 0.99) - 1] * 1000:.1f} ms, "
        f"worst {latencies[-1] * 1000:.1f} ms"
    )
    print(f"server RSS: {before:.1f} MiB before, {peak:.1f} MiB at peak")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--logins", type=int, default=120)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, serving(Path(tmp) / "data") as server:
        owner = server.owner()
        asyncio.run(flood(server.url, (owner.email, owner.api_key), server.pid, args.logins))


if __name__ == "__main__":
    main()
