"""The command line's progress bars: on a terminal only, never with --json."""

from __future__ import annotations

import io
import json
from typing import Any

import pyarrow as pa
import pytest

from catalog.cli import main


class Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def root(catalog: Any) -> str:
    table = catalog.create_store("s", "keyvalue", "string", "long", num_partitions=2)
    for i in range(3):
        table.commit(table.stage(pa.array([f"k{i}", f"j{i}"]), pa.array([i, i])))
    return str(catalog.root)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_no_bar_when_stderr_is_not_a_terminal(
    root: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "--root", root, "compact", "s")
    assert code == 0 and "compacted: True" in out
    lines = err.splitlines()  # the partition lines compact always printed, and nothing else
    assert lines and all(line.startswith("partition ") for line in lines)
    assert "\r" not in err and "%|" not in err and "it/s" not in err
    code, out, err = run(capsys, "--root", root, "vacuum", "--older-than", "0 ms")
    assert code == 0 and out.startswith("s: deleted 0 file(s)") and err == ""


def test_a_bar_on_a_terminal_but_not_with_json(
    root: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert main(["--root", root, "vacuum", "--dry-run"]) == 0
    assert main(["--root", root, "compact", "s"]) == 0
    shown = terminal.getvalue()
    assert "vacuum: 100%" in shown and "1/1" in shown
    assert "compact s:" in shown and "2/2" in shown and "partition 1:" in shown
    capsys.readouterr()
    terminal.seek(0)
    terminal.truncate()
    assert main(["--root", root, "--json", "vacuum", "s"]) == 0
    assert main(["--root", root, "--json", "compact", "s"]) == 0
    assert terminal.getvalue() == ""  # --json: no bar, no lines
    out = capsys.readouterr().out
    assert json.loads(out.split("\n]\n")[0] + "\n]")[0]["store"] == "s"
