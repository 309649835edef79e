"""Every notebook in examples/notebooks runs, as a user would run it, and shows what it says."""

from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "examples" / "notebooks"

EXPECTED = {
    "exchange_rates.ipynb": [
        "written 6 rates", "plotted 4 versions", "as of 10:30: EUR 1.0735", "as of 10:30: GBP 1.248",
    ],
    "page_views.ipynb": [
        "ada 09:05 5 [('source', b'web'), ('campaign', b'spring')]", "windows: [4, 5, 2]",
    ],
    "iqv2_tour.ipynb": [
        "key b: 2", "range a..b: [('a', 1), ('b', 2)]",
        "lamp as of 1.5 s: VersionedRecord(value=20.0, timestamp=1000, valid_to=2000)",
    ],
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_notebook_runs_and_shows_its_story(
    name: str, tmp_path: Path, spark_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("STATE_STORE_ROOT", str(tmp_path / "warehouse"))
    monkeypatch.chdir(tmp_path)
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3").execute()
    text = "".join(
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )
    for line in EXPECTED[name]:
        assert line in text, f"{name}: {line!r} not in:\n{text}"
    images = [
        output for cell in notebook.cells if cell.cell_type == "code"
        for output in cell.get("outputs", []) if "image/png" in output.get("data", {})
    ]  # fmt: skip
    assert len(images) == (0 if name == "iqv2_tour.ipynb" else 1)  # the plot is shown
    assert sorted(EXPECTED) == sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
