"""``versioned``: Kafka's ``VersionedKeyValueStore`` (KIP-889, KIP-960/968), one concern per
module, each importing only those listed after it:

* ``store``: the store itself (``VersionedKeyValueStore``): arguments, the write batch, reads;
* ``history``: every version ``get`` can answer, read once and held in memory as columns
  (``VersionedHistory``: many as-of lookups answered by binary search, the as-of join's);
* ``lookups``: many as-of lookups at once (``get_many``, ``as_of_columns``);
* ``scans``: every key's versions in a time range, or as of an instant;
* ``put``: Kafka's put algorithm, step for step;
* ``client``: the segments and the observed stream time over the bytes store (Kafka's
  ``VersionedStoreClient``), which the modules above ask;
* ``columns``: the kind's Kafka rows computed from Arrow columns;
* ``format``: the byte layouts, documented at its top, encode and decode.
"""
