"""Erasures: how an ``erase`` record changes what every earlier record lists.

Records are immutable and chained by their checksums, so an erasure does not rewrite them. It
rewrites the files that held an erased key (each piece of such a file, without the key's rows)
and publishes one ``erase`` record that names, per piece, the piece that replaces it
(``CommitRecord.replaced``). From then on every record is read through the replacements of the
erasures the log holds (``Erasures.resolve``): time travel to any commit, change feeds and
restores read the new pieces, which hold none of the keys, and the old files are listed by no
record any more, so ``vacuum`` deletes them once the erasure is older than its window
(``superseded``). Every record carries the ids of the erasures before it (``erasures``), so
reading the newest record tells a reader which erase records to read.

A partition's local cache built before an erasure may hold its keys: the erasure's id is part
of the cache's name (``generation``), so a cache of an older generation is never read again,
and deleted (``catalog.caches.partitions``).
"""

from __future__ import annotations

from dataclasses import replace

from catalog.log.records import ChangelogFile, CommitRecord


class Erasures:
    """The replacements of every erase record read so far (see the module doc)."""

    def __init__(self) -> None:
        self.ids: set[int] = set()
        self._by_piece: dict[tuple[str, int], ChangelogFile] = {}
        self._generation: dict[int, int] = {}
        self._superseded: dict[str, int] = {}

    def __bool__(self) -> bool:
        return bool(self.ids)

    def add(self, record: CommitRecord) -> None:
        """Take the replacements of erase record ``record``."""
        if record.id in self.ids:
            return
        self.ids.add(record.id)
        for r in record.replaced:
            self._by_piece[(r.path, r.offset)] = r.file
            self._generation[r.partition] = max(self._generation.get(r.partition, 0), record.id)
            self._superseded[r.path] = max(self._superseded.get(r.path, 0), record.timestamp_ms)

    def current(self, ref: ChangelogFile) -> ChangelogFile:
        """The piece read in place of ``ref``: ``ref`` itself unless an erasure replaced it
        (or the piece that replaced it, and so on)."""
        while (found := self._by_piece.get((ref.path, ref.offset))) is not None:
            ref = found
        return ref

    def resolve(self, record: CommitRecord) -> CommitRecord:
        """``record`` listing the pieces that replace those it names."""
        if not self._by_piece or not record.files:
            return record
        files = tuple(self.current(f) for f in record.files)
        return record if files == record.files else replace(record, files=files)

    def generation(self, partition: int) -> int:
        """The newest erasure that rewrote a piece of ``partition`` (0: none)."""
        return self._generation.get(partition, 0)

    def superseded(self) -> dict[str, int]:
        """Path -> the time (epoch ms) of the erasure after which no record lists it."""
        return dict(self._superseded)


__all__ = ["Erasures"]
