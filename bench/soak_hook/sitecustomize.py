"""bench/soak.py's memory hook, imported at start-up by the server that script runs.

Only on the ``PYTHONPATH`` of that server, and only with ``SOAK_SNAPSHOT_DIR`` set:

- ``stats.request`` (a file it finds there, then removes) appends one JSON line to
  ``memstats.jsonl``: pymalloc's arenas, what SQLite's allocator holds
  (``sqlite3_memory_used``, all connections), glibc's heap figures (``mallinfo2``), the
  Python objects the collector tracks by type, the event bus's queued events, the
  SQLAlchemy compiled caches' sizes, and tracemalloc's traced total when tracing; with
  ``trim.request`` there too, the RSS before and after a ``malloc_trim(0)``;
- ``snapshot.request``, with ``SOAK_TRACEMALLOC=FRAMES`` set, collects garbage, starts
  tracemalloc the first time and dumps a snapshot as ``soak-NNN.snapshot`` (written under
  another name first, so that a reader never sees half of one).

A thread watches for the files every 0.2 s: a signal handler would wait for the event
loop's next Python callback, which an idle server may not run for a long time.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import sys
import threading
import time
import tracemalloc
from collections import Counter
from pathlib import Path

_directory = os.environ.get("SOAK_SNAPSHOT_DIR")
_taken = 0


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _sqlite_library() -> ctypes.CDLL | None:
    # The library _sqlite3 is linked against (already loaded: the same instance).
    try:
        library = ctypes.CDLL("libsqlite3.so.0")
        library.sqlite3_memory_used.restype = ctypes.c_int64
        library.sqlite3_memory_highwater.restype = ctypes.c_int64
        library.sqlite3_memory_highwater.argtypes = [ctypes.c_int]
        return library
    except (OSError, AttributeError):
        return None


def _mallinfo() -> dict[str, int]:
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
        info = libc.mallinfo2()
    except (OSError, AttributeError):
        return {}
    return {name: getattr(info, name) for name, _ in _MallInfo2._fields_}


def _rss_kb() -> int:
    with open("/proc/self/status") as status:
        for text in status:
            if text.startswith("VmRSS:"):
                return int(text.split()[1])
    return 0


def _pymalloc() -> dict[str, int]:
    """pymalloc's arenas and blocks, from ``sys._debugmallocstats`` (it prints to fd 2)."""
    import re
    import tempfile

    with tempfile.TemporaryFile() as out:
        saved = os.dup(2)
        try:
            os.dup2(out.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read().decode(errors="replace")
    found: dict[str, int] = {}
    for key, label in (
        ("arenas", "# arenas allocated current"),
        ("allocated_blocks", "# bytes in allocated blocks"),
        ("available_blocks", "# bytes in available blocks"),
        ("total", "Total"),
    ):
        match = re.search(re.escape(label) + r"\s*=\s*([\d,]+)", text)
        if match:
            found[key] = int(match.group(1).replace(",", ""))
    return found


def _services() -> object | None:
    """The server's ``Services``: start-up's objects are frozen, out of the collector's
    sight, so they are found from ``run_server``'s ``app`` on the main thread's stack."""
    frame = sys._current_frames().get(threading.main_thread().ident or 0)
    while frame is not None:
        app = frame.f_locals.get("app")
        state = getattr(app, "state", None)
        if state is not None and hasattr(state, "services"):
            return state.services
        frame = frame.f_back
    return None


def _stats() -> None:
    assert _directory is not None
    gc.collect()
    line: dict[str, object] = {"time": time.time(), "gc_objects": len(gc.get_objects())}
    trim = Path(_directory) / "trim.request"
    if trim.exists():
        # Asked for once (bench/soak.py's last sample): how much of the RSS is memory
        # glibc holds freed, given back by malloc_trim.
        trim.unlink()
        line["rss_before_trim_kb"] = _rss_kb()
        started = time.perf_counter()
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        line["trim_ms"] = round((time.perf_counter() - started) * 1000, 2)
        line["rss_after_trim_kb"] = _rss_kb()
    line["pymalloc"] = _pymalloc()
    sqlite = _sqlite_library()
    if sqlite is not None:
        line["sqlite_used"] = sqlite.sqlite3_memory_used()
        line["sqlite_highwater"] = sqlite.sqlite3_memory_highwater(0)
    line["malloc"] = _mallinfo()
    line["threads"] = threading.active_count()
    if tracemalloc.is_tracing():
        line["traced"] = tracemalloc.get_traced_memory()[0]
    line["modules"] = len(sys.modules)
    # Which kinds of objects there are (the collector's, so containers only).
    kinds = Counter(type(o).__qualname__ for o in gc.get_objects())
    line["kinds"] = dict(kinds.most_common(60))
    services = _services()
    if services is not None:
        engines = [
            value.sync_engine
            for value in vars(services.db).values()
            if hasattr(value, "sync_engine")
        ]
        line["compiled_cache"] = [len(e._compiled_cache or ()) for e in engines]
        queues = list(getattr(services.bus, "_queues", {}).values())
        line["bus_queues"] = len(queues)
        line["bus_events"] = sum(len(q.events) for q in queues)
        line["bus_events_max"] = max((len(q.events) for q in queues), default=0)
        line["presence_realms"] = len(services.presence.realms)
    with open(Path(_directory) / "memstats.jsonl", "a") as out:
        out.write(json.dumps(line) + "\n")


def _dump() -> None:
    global _taken
    assert _directory is not None
    gc.collect()
    if not tracemalloc.is_tracing():
        # Traced from the first snapshot on: from start-up, the migrations and the
        # start itself ran several times slower (bench/soak.py waits only so long).
        tracemalloc.start(int(os.environ.get("SOAK_TRACEMALLOC", "1")))
    snapshot = tracemalloc.take_snapshot()
    path = Path(_directory) / f"soak-{_taken:03d}.snapshot"
    temporary = path.with_suffix(".tmp")
    snapshot.dump(str(temporary))
    temporary.replace(path)
    _taken += 1


def _watch(directory: Path) -> None:
    """Answer the requests bench/soak.py leaves as files."""
    while True:
        time.sleep(0.2)
        for name, work in (("stats.request", _stats), ("snapshot.request", _dump)):
            request = directory / name
            if request.exists():
                request.unlink()
                work()


if _directory:
    threading.Thread(target=_watch, args=(Path(_directory),), name="soak-hook", daemon=True).start()
