"""What importing the packages costs: Spark imports ``pyspark_state_store`` in the Python
workers that look up, plan and commit every query, so it must not load the engines."""

from __future__ import annotations

import subprocess
import sys

import stores


def test_every_store_name_resolves_to_its_module() -> None:
    assert set(stores._MODULE_OF) == set(stores.__all__)
    for name in stores.__all__:
        value = getattr(stores, name)
        if isinstance(value, type):
            assert value.__module__.startswith(stores._MODULE_OF[name])


def test_unknown_store_name_is_an_attribute_error() -> None:
    try:
        stores.NoSuchStore  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchStore" in str(exc)
    else:
        raise AssertionError("stores.NoSuchStore resolved")


def test_format_module_imports_no_engine() -> None:
    code = (
        "import sys, pyspark_state_store; "
        "print(sorted(m for m in ('rocksdict', 'pyarrow', 'numpy', 'fsspec') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
