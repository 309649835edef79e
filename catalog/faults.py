"""Named crash points of the commit protocol, for the crash-matrix tests.

Each step of a write, a read and a cleanup calls ``point("<step>")``. Unless the environment
variable ``STATE_STORE_FAULTS`` names a rule file, that is one dictionary lookup and nothing
else. The crash tests write a rule file (``<step> kill|killgroup|interrupt|error`` per line)
and run writers, readers and Spark workers as separate processes: the first process to reach a
named step claims the file (an atomic rename, so exactly one process fires) and then kills
itself with SIGKILL, kills every process of its session with SIGKILL (``killgroup``: a whole
Spark application started in its own session, driver, JVM and workers at once; Linux), raises
KeyboardInterrupt, or raises OSError. A SIGKILL at a step is what a kill from outside at that instant would do,
without a race to aim it.

Steps: ``stage.file_written``, ``stage.done``, ``commit.before_record``,
``commit.record_writing`` (local disks: the record's temporary file written, not yet linked),
``commit.after_record``, ``abort.before_delete``, ``cache.applied``, ``scan.writing``,
``vacuum.deleting``, ``drop.after_record``.
"""

from __future__ import annotations

import os
import signal

ENV = "STATE_STORE_FAULTS"


def _kill_session() -> None:
    """SIGKILL every process of this process's session, this one last (PySpark's workers run
    in process groups of their own, so a group kill would miss the driver). The session is
    scanned again until a scan finds no process it has not killed: one forked while a scan
    ran is caught by the next (a process with SIGKILL pending forks no more)."""
    session = os.getsid(0)
    me = os.getpid()
    killed: set[int] = set()
    while True:
        found = set()
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == me or int(entry) in killed:
                continue
            try:
                if os.getsid(int(entry)) == session:
                    os.kill(int(entry), signal.SIGKILL)
                    found.add(int(entry))
            except (ProcessLookupError, PermissionError):
                continue
        if not found:
            break
        killed |= found
    os.kill(me, signal.SIGKILL)


def point(step: str) -> None:
    """Fire the rule for ``step`` if the rule file names it (see module doc)."""
    rules = os.environ.get(ENV)
    if not rules:
        return
    try:
        with open(rules) as f:
            lines = [line.split() for line in f.read().splitlines() if line.strip()]
    except FileNotFoundError:
        return
    action = next((words[1] for words in lines if len(words) == 2 and words[0] == step), None)
    if action is None:
        return
    try:
        os.rename(rules, f"{rules}.fired")  # exactly one process claims the fault
    except FileNotFoundError:
        return
    if action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif action == "killgroup":
        _kill_session()
    elif action == "interrupt":
        raise KeyboardInterrupt(f"fault injected at {step}")
    else:
        raise OSError(f"fault injected at {step}")
