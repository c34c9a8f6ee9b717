"""Giving the memory a server process has freed back to the operating system.

glibc's allocator keeps what the process frees inside its heaps for later allocations and
hands back only a free stretch at a heap's top. Under a steady load the free space is
scattered among live allocations (events of the queues, response buffers, SQLite's pages
and statements, allocated in the driver threads' own heaps), so a server's RSS crept up
while what it held stayed level, and it kept those pages after its event queues expired.
``malloc_trim`` also returns the free pages inside the heaps (``madvise``); it is cheap
when there is little to return, and the server calls it after each timed full garbage
collection. Python's own small-object arenas are not glibc's: an arena goes back to the
system only once empty, whatever this does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    # ctypes is imported at the first collection, not by every server at start.
    import ctypes

    try:
        # The process's own symbols, the C library's among them.
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None  # not glibc (musl, macOS): their allocators behave otherwise
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release_freed_memory() -> bool:
    """Return the allocator's free pages to the operating system; False where the C
    library has no ``malloc_trim``."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
