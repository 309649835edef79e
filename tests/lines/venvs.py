"""The Spark lines the connector is checked on, each in a virtual environment of its own, and
the wheel users install.

A line's venv (its pyspark with the ``connect`` extra, the connector's dependencies and the
few test tools its tests use) is built once per machine and kept in
``$XDG_CACHE_HOME/state_store/spark-lines`` (default ``~/.cache/...``), outside the checkout,
under a name that hashes what went into it; a new dependency builds a new one. It is built
beside its place and renamed into it, so an interrupted build leaves nothing half-made, and a
lock file keeps two test processes from building or changing one venv at once.

The wheel is built (sdist, then the wheel from the sdist, as ``python -m build`` does) from the
checkout's tracked files, once per hash of its sources, into the same cache; each line's venv
gets it installed before its tests run (``installed``), without touching its dependencies.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: What the wheel is built from: the files under these that git does not ignore (all of them if
#: the checkout is no git work tree).
SOURCES = ("pyproject.toml", "README.md", "pyspark_state_store.py", "stores", "catalog", "datasource")
#: The test tools (and the libraries the Python-write tests and README blocks import) a line's
#: tests need, by name; their versions come from the ``test`` extra.
TEST_TOOLS = ("pytest", "pytest-xdist", "hypothesis", "polars", "duckdb")


class LineSetupError(RuntimeError):
    """A line's interpreter, venv or wheel could not be had; the message says what to install."""


@dataclass(frozen=True)
class SparkLine:
    """One Spark line: the newest pyspark of it, and the Python it is checked with."""

    pyspark: str
    python: str

    @property
    def id(self) -> str:
        return f"pyspark-{self.pyspark}-py{self.python}"

    def interpreter(self) -> Path:
        """The ``python<version>`` of this line: pyenv's, else one on ``PATH``.

        Raises:
            LineSetupError: no such interpreter (naming how to install one).
        """
        found = sorted(
            glob.glob(os.path.expanduser(f"~/.pyenv/versions/{self.python}.*/bin/python{self.python}"))
        )
        candidates = [*reversed(found), shutil.which(f"python{self.python}")]
        for candidate in filter(None, candidates):
            probe = subprocess.run(
                [candidate, "-c", "import sys, venv; print('%d.%d' % sys.version_info[:2])"],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if probe.returncode == 0 and probe.stdout.strip() == self.python:
                return Path(candidate)
        raise LineSetupError(
            f"pyspark {self.pyspark} is checked on Python {self.python}, which this machine lacks "
            f"(no ~/.pyenv/versions/{self.python}.*, no python{self.python} on PATH): install it, "
            f"e.g. 'pyenv install {self.python}' or 'apt-get install python{self.python} "
            f"python{self.python}-venv'"
        )


#: Each Spark line's newest release on its Python. Together they cover Python 3.10 to 3.13;
#: the whole suite runs on the interpreter that runs it (the README's test command).
LINES = (
    SparkLine("4.0.5", "3.10"),
    SparkLine("4.1.4", "3.12"),
    SparkLine("4.2.1", "3.13"),
    SparkLine("4.3.0", "3.13"),
)


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/state_store/spark-lines`` (default ``~/.cache/...``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "state_store" / "spark-lines"


@contextlib.contextmanager
def locked(path: Path, *, shared: bool = False) -> Iterator[None]:
    """Hold an flock on ``path`` (created): shared to use what it guards, exclusive to change it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _run(command: list[str], what: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        raise LineSetupError(f"{what} failed ({' '.join(command[:4])} ...):\n{_tail(done.stdout + done.stderr)}")
    return done


def source_files() -> list[Path]:
    """The checkout's files the wheel and sdist are built from."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *SOURCES], cwd=REPO, capture_output=True, check=False
    )
    if listed.returncode == 0 and listed.stdout:
        names = [n for n in listed.stdout.decode().split("\0") if n]
    else:
        names = [
            str(p.relative_to(REPO))
            for s in SOURCES
            for p in ([REPO / s] if (REPO / s).is_file() else sorted((REPO / s).rglob("*")))
            if p.is_file() and "__pycache__" not in p.parts
        ]
    return [REPO / n for n in sorted(names) if (REPO / n).is_file()]


def source_hash() -> str:
    digest = hashlib.sha256()
    for path in source_files():
        digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class Built:
    """The wheel and sdist of one source hash."""

    wheel: Path
    sdist: Path
    digest: str


def build_wheel() -> Built:
    """Build the sdist and, from it, the wheel of the checkout's sources, once per source hash.

    Raises:
        LineSetupError: the build failed (its output's tail), or ``build`` is missing.
    """
    digest = source_hash()
    target = cache_root() / "wheels" / digest
    with locked(cache_root() / "wheels" / f"{digest}.lock"):
        if not target.is_dir():
            work = target.with_name(f"{digest}.tmp-{os.getpid()}")
            shutil.rmtree(work, ignore_errors=True)
            source = work / "src"
            for path in source_files():
                copy = source / path.relative_to(REPO)
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, copy)
            _run(
                [sys.executable, "-m", "build", "--outdir", str(work / "dist"), str(source)],
                "building the wheel ('build' is in the test extra: pip install '.[test]')",
            )
            (work / "dist").rename(target)
            shutil.rmtree(work, ignore_errors=True)
    wheels, sdists = sorted(target.glob("*.whl")), sorted(target.glob("*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        raise LineSetupError(f"{target} holds {wheels + sdists}, not one wheel and one sdist")
    return Built(wheels[0], sdists[0], digest)


def requirements(wheel: Path, line: SparkLine) -> list[str]:
    """What a line's venv installs besides the wheel: the line's pyspark with its ``connect``
    extra, the wheel's other dependencies and the test tools (versions from the ``test``
    extra)."""
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = (n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        text = archive.read(metadata).decode()
    wanted: list[str] = [f"pyspark[connect]=={line.pyspark}"]
    for requirement in re.findall(r"^Requires-Dist: (.+)$", text, flags=re.MULTILINE):
        spec, _, marker = requirement.partition(";")
        name = re.split(r"[\s\[<>=!~;]", spec.strip(), maxsplit=1)[0].lower()
        extra = re.search(r"extra\s*==\s*['\"]([\w-]+)['\"]", marker)
        if name == "pyspark":
            continue
        if extra is None or (extra.group(1) == "test" and name in TEST_TOOLS):
            wanted.append(spec.strip())
    return wanted


def line_venv(line: SparkLine, wheel: Path) -> Path:
    """The cached venv of ``line`` (built on first use), without the connector itself.

    Raises:
        LineSetupError: no interpreter for the line, or pip failed (naming what to install).
    """
    wanted = requirements(wheel, line)
    interpreter = line.interpreter()
    key = hashlib.sha256("\n".join([str(interpreter), *wanted]).encode()).hexdigest()[:12]
    venv = cache_root() / f"{line.id}-{key}"
    if (venv / "ready").is_file():  # complete: a venv is renamed into place when built
        return venv
    with locked(venv.with_name(venv.name + ".lock")):
        if not (venv / "ready").is_file():
            work = venv.with_name(f"{venv.name}.tmp-{os.getpid()}")
            shutil.rmtree(work, ignore_errors=True)
            _run([str(interpreter), "-m", "venv", str(work)], f"creating the venv of {line.id}")
            _run(
                [str(work / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check",
                 "-q", *wanted],
                f"installing pyspark {line.pyspark} and the connector's dependencies on Python "
                f"{line.python} (pip reaches PyPI for pyspark's sources on first use)",
            )  # fmt: skip
            (work / "ready").write_text("\n".join(wanted) + "\n")
            shutil.rmtree(venv, ignore_errors=True)
            work.rename(venv)
    return venv


@contextlib.contextmanager
def installed(line: SparkLine, built: Built) -> Iterator[Path]:
    """The python of ``line``'s venv with ``built``'s wheel installed, held (shared) while the
    caller runs it: the wheel is installed only when another one is in place."""
    venv = line_venv(line, built.wheel)
    lock = venv.with_name(venv.name + ".lock")
    stamp = venv / "wheel.sha"

    def current() -> bool:
        return stamp.is_file() and stamp.read_text() == built.digest

    with locked(lock, shared=True):
        ready = current()
    if not ready:  # waits for the venv's users to finish, then installs unless one did
        with locked(lock):
            if not current():
                _run(
                    [str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                     "--disable-pip-version-check", "--no-deps", "--force-reinstall",
                     str(built.wheel)],
                    f"installing the wheel into {line.id}",
                )  # fmt: skip
                stamp.write_text(built.digest)
    with locked(lock, shared=True):
        yield venv / "bin" / "python"
