"""Which warehouse a read without option ``root`` uses, and what its errors say about it."""

from __future__ import annotations

import pytest

from datasource.options import StoreOptions
from datasource.reader import load_table
from stores.errors import StoreNotFoundError


def test_a_missing_store_without_root_says_how_the_root_was_chosen(
    warehouse: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STATE_STORE_ROOT", warehouse)
    with pytest.raises(StoreNotFoundError) as e:
        load_table(StoreOptions.parse({"store": "rates"}))
    message = str(e.value)
    assert message.startswith("[STORE_NOT_FOUND] store 'rates' does not exist under file://")
    assert f"no option 'root': the warehouse is $STATE_STORE_ROOT ({warehouse!r})" in message
    assert "give option 'root'" in message
    monkeypatch.delenv("STATE_STORE_ROOT")
    with pytest.raises(StoreNotFoundError, match="the default './state-warehouse'"):
        load_table(StoreOptions.parse({"store": "rates", "path": "rates"}))
    with pytest.raises(StoreNotFoundError) as e:
        load_table(StoreOptions.parse({"store": "rates", "root": warehouse}))
    assert "no option 'root'" not in str(e.value)  # the root was chosen explicitly
