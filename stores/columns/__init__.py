"""Columnar helpers: Arrow columns of bytes encoded (``encode``) and decoded (``decode``),
key sorts, header columns, bulk arguments checked."""
