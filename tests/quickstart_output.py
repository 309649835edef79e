"""What the README's quickstart (``examples/quickstart.py``) prints, checked the same wherever
it runs: from the checkout (``test_working_directory``) and from each Spark line's installed
wheel (``tests/lines``)."""

from __future__ import annotations


def check_quickstart_output(out: str) -> None:
    """Assert that ``out`` shows the latest rates, the rates as of 10:30 and the SQL view."""
    assert "Latest rates:" in out and "Rates as of 2024-05-01 10:30 UTC:" in out, out[-3000:]
    latest, rest = out.split("Rates as of")
    as_of, sql = rest.split("through a SQL view:")
    assert "1.0698" in latest and "1.2511" in latest and "0.00641" in latest
    assert "1.0735" in as_of and "1.248" in as_of and "1.0698" not in as_of
    assert "EUR|1.0698" in sql and "JPY" not in sql
