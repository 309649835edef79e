"""Every path of a store: its folder names, defined once here (``COMMITS_DIR`` ...), the
names of its files, and the checks of path components taken from data.

Store names, store ids and changelog file paths are read from commit records and options; a
record edited to hold ``../../x`` or an absolute path must never make a read or a write leave
the warehouse root or the cache directory. Every such component is checked here against a
strict pattern, and anything else is refused with a coded error naming the value.

| component        | pattern                                   | where it comes from                |
|------------------|-------------------------------------------|------------------------------------|
| store name       | ``[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}``     | options, directory names, records  |
| store id         | 32 lower-case hex digits                  | the first commit record            |
| write id         | ``[A-Za-z0-9_-]{1,200}``                  | writers (staged file name prefix)  |
| commit record    | ``commits/<20 digits>.json`` (``record_name``) | listings of ``commits/``       |
| changelog path   | ``changelog/tasks/<file name>.arrow``      | commit records                     |
|                  | ``changelog/<5 digits>/<file name>.arrow`` | records of earlier releases        |
| snapshot path    | ``snapshot/<5 digits>/<file name>.arrow``  | compaction records                 |
"""

from __future__ import annotations

import re

from stores.errors import CorruptDataError, InvalidOptionError

#: The folders of a store (``<root>/<store>/<folder>``); every module names them from here.
COMMITS_DIR = "commits"
CHANGELOG_DIR = "changelog"
#: Inside ``CHANGELOG_DIR``: writer tasks' files (earlier releases kept a folder per partition).
TASKS_DIR = "tasks"
SNAPSHOT_DIR = "snapshot"
ABORTED_DIR = "aborted"

_RECORD_NAME = re.compile(r"(\d{20})\.json")
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}")
_STORE_ID = re.compile(r"[0-9a-f]{32}")
_WRITE_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")
# A data file's name inside its folder, and the folder of one partition (5 digits).
_FILE = r"([A-Za-z0-9_-]{1,300})\.arrow"
_PARTITION = r"(\d{5})"
#: A changelog file of earlier releases: one partition's rows from one writer task (still read).
_CHANGELOG = re.compile(f"{re.escape(CHANGELOG_DIR)}/{_PARTITION}/{_FILE}")
#: A writer task's file: its rows of every partition, one Arrow IPC file per partition back to
#: back; a commit record lists each piece with its offset (``catalog.log.changelog``).
_TASK_CHANGELOG = re.compile(f"{re.escape(CHANGELOG_DIR)}/{re.escape(TASKS_DIR)}/{_FILE}")
_SNAPSHOT = re.compile(f"{re.escape(SNAPSHOT_DIR)}/{_PARTITION}/{_FILE}")


def record_name(commit_id: int) -> str:
    """The file name of commit record ``commit_id`` in ``COMMITS_DIR`` (20 digits: names sort
    as ids do)."""
    return f"{commit_id:020d}.json"


def record_id(name: str) -> int | None:
    """The commit id a file name of ``COMMITS_DIR`` holds, None if it names no record."""
    match = _RECORD_NAME.fullmatch(name)
    return None if match is None else int(match.group(1))


def check_store_name(name: str) -> str:
    """Return ``name`` if it can name a store (it becomes a directory name).

    Raises:
        InvalidOptionError: the name is empty or has characters other than letters, digits,
            ``_``, ``.`` and ``-``, or starts with ``.`` or ``-`` (so ``..`` is refused).
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidOptionError(
            f"store name {name!r} is not valid; use letters, digits, '_', '.' and '-' "
            "(not starting with '.' or '-')",
            code="INVALID_STORE_NAME",
        )
    return name


def check_store_id(store_id: object, where: str) -> str:
    """Return a store id read from ``where`` if it is 32 lower-case hex digits.

    Raises:
        CorruptDataError: anything else (UNSAFE_PATH): the id names a cache directory.
    """
    if not isinstance(store_id, str) or not _STORE_ID.fullmatch(store_id):
        raise CorruptDataError(
            f"{where} names store id {store_id!r}; a store id is 32 hex digits",
            code="UNSAFE_PATH",
        )
    return store_id


def check_write_id(write_id: str) -> str:
    """Return ``write_id`` if it can prefix staged file names.

    Raises:
        InvalidOptionError: it has characters other than letters, digits, ``_`` and ``-``.
    """
    if not isinstance(write_id, str) or not _WRITE_ID.fullmatch(write_id):
        raise InvalidOptionError(
            f"write id {write_id!r} is not valid; use 1 to 200 letters, digits, '_' or '-'"
        )
    return write_id


def task_changelog_path(name: str) -> str:
    """The path, relative to a store's directory, of a writer task's changelog file (the rows
    of every partition it staged)."""
    path = f"{CHANGELOG_DIR}/{TASKS_DIR}/{name}.arrow"
    if not _TASK_CHANGELOG.fullmatch(path):
        raise InvalidOptionError(f"changelog file name {name!r} is not valid")
    return path


def is_task_changelog(path: str) -> bool:
    """Whether ``path`` (checked) is a writer task's file of several partitions' pieces."""
    return _TASK_CHANGELOG.fullmatch(path) is not None


def snapshot_path(partition: int, name: str) -> str:
    """The path, relative to a store's directory, of a partition snapshot."""
    path = f"{SNAPSHOT_DIR}/{partition:05d}/{name}.arrow"
    if not _SNAPSHOT.fullmatch(path):
        raise InvalidOptionError(f"snapshot file name {name!r} is not valid")
    return path


def is_snapshot(path: str) -> bool:
    """Whether ``path`` names a snapshot file (``snapshot/...``), not a changelog file."""
    return path.startswith(f"{SNAPSHOT_DIR}/")


def check_changelog_path(
    path: object, partition: object, where: str, *, snapshot: bool = False
) -> str:
    """Return a changelog (or, with ``snapshot``, a snapshot) path read from a commit record
    if it stays inside its store.

    Raises:
        CorruptDataError: the path is not ``changelog/<partition>/<name>.arrow`` (or
            ``snapshot/...``) of the record's own partition (UNSAFE_PATH): absolute, ``..``,
            or another folder.
    """
    pattern = _SNAPSHOT if snapshot else _CHANGELOG
    match = pattern.fullmatch(path) if isinstance(path, str) else None
    task_file = (
        isinstance(path, str) and not snapshot and _TASK_CHANGELOG.fullmatch(path)
        and isinstance(partition, int) and partition >= 0
    )  # fmt: skip
    if (
        not isinstance(path, str)
        or not isinstance(partition, int)
        or not (task_file or (match is not None and int(match.group(1)) == partition))
    ):
        kind, folder = ("snapshot", SNAPSHOT_DIR) if snapshot else ("changelog", CHANGELOG_DIR)
        raise CorruptDataError(
            f"{where} lists file {path!r} for partition {partition!r}; a {kind} file is "
            f"'{folder}/<partition, 5 digits>/<name>.arrow'"
            + ("" if snapshot else f" or '{CHANGELOG_DIR}/{TASKS_DIR}/<name>.arrow'")
            + " inside its store",
            code="UNSAFE_PATH",
        )
    return path
