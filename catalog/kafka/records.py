"""Changelog records as Spark's Kafka connector moves them, and the changelog topic's name.

``RECORD_SCHEMA`` is what Spark's Kafka sink writes (``topic``, ``partition``, ``key``,
``value``, ``headers``) plus the record's time (``timestamp``, epoch ms), which Kafka Streams'
restore gives a timestamped value. Spark's Kafka source reads the same columns and
``offset`` (and ``timestampType``); an import takes that shape (see ``changelog``).
"""

from __future__ import annotations

import re

import pyarrow as pa

from stores.columns.headers import HEADERS_TYPE
from stores.errors import InvalidOptionError

#: One changelog record per row: the columns Spark's Kafka sink writes, and the record time.
RECORD_SCHEMA = pa.schema(
    [
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("key", pa.binary(), nullable=False),
        pa.field("value", pa.binary()),
        pa.field("timestamp", pa.int64(), nullable=False),
        pa.field("headers", HEADERS_TYPE),
    ]
)

#: Kafka's legal topic names (``org.apache.kafka.common.internals.Topic``).
_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def check_topic(name: str) -> str:
    """``name`` if Kafka accepts it as a topic name.

    Raises:
        InvalidOptionError: not 1 to 249 of ``a-z A-Z 0-9 . _ -``, or ``.``/``..``
            (INVALID_TOPIC).
    """
    if not isinstance(name, str) or not _TOPIC.fullmatch(name) or name in (".", ".."):
        raise InvalidOptionError(
            f"topic {name!r} is not a Kafka topic name: 1 to 249 characters of a-z, A-Z, "
            "0-9, '.', '_' and '-' (not '.' or '..')",
            code="INVALID_TOPIC",
        )
    return name


def changelog_topic(application_id: str, store: str) -> str:
    """The changelog topic of store ``store`` of Kafka Streams application
    ``application_id``: ``<application.id>-<store>-changelog``
    (``ProcessorStateManager.storeChangelogTopic``).

    Raises:
        InvalidOptionError: the name is no legal topic name (INVALID_TOPIC).
    """
    return check_topic(f"{application_id}-{store}-changelog")


__all__ = ["RECORD_SCHEMA", "changelog_topic", "check_topic"]
