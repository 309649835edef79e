"""The names of a store's partition caches in a cache directory.

``p<partition, 5 digits>.v<CACHE_FORMAT>[.e<erasure>]``: the cache layout's format (an older
one is not found, and rebuilt) and the newest erasure that rewrote a piece of the partition
(``catalog.log.erasures``: a cache named before it may hold the erased keys, so it is never
read again), with ``.lock`` and ``.scans`` (``catalog.caches.scan_files``) beside it.
"""

from __future__ import annotations

import re

#: Bumped when the cache layout changes: older caches are simply not found (and rebuilt).
CACHE_FORMAT = 2
_NAME = re.compile(rf"p(\d{{5}})\.v{CACHE_FORMAT}(?:\.e(\d+))?")
_PARTITION = re.compile(r"p(\d{5})\.")


def cache_name(partition: int, generation: int) -> str:
    """The name of ``partition``'s cache after erasure ``generation`` (0: none)."""
    return f"p{partition:05d}.v{CACHE_FORMAT}" + (f".e{generation}" if generation else "")


def generation_of(name: str) -> int | None:
    """The erasure generation of a cache directory's name (0: before any erasure); None
    for another format's, or not a cache's."""
    match = _NAME.fullmatch(name)
    return int(match.group(2) or 0) if match else None


def partition_of(name: str) -> int | None:
    """The partition a cache directory's entry (cache, lock, scan files) belongs to."""
    match = _PARTITION.match(name)
    return int(match.group(1)) if match else None


__all__ = ["CACHE_FORMAT", "cache_name", "generation_of", "partition_of"]
