"""Durability on local disks: directories whose new entries survive a power loss.

A new file or directory is durable only once its parent directory is fsynced too; every local
write the log, the caches and the scan files make goes through these.
"""

from __future__ import annotations

import os


def fsync_dir(path: str) -> None:
    """fsync a directory, so that the entries created in it are durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def makedirs(path: str) -> None:
    """Create a directory and its missing parents, each new entry fsynced into its parent."""
    missing = []
    probe = path
    while probe and not os.path.isdir(probe):
        missing.append(probe)
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    os.makedirs(path, exist_ok=True)
    for created in reversed(missing):
        fsync_dir(os.path.dirname(created))
