"""``timestamped``: Kafka's ``TimestampedKeyValueStore[WithHeaders]`` (KIP-258, KIP-1271):
the two stores and their formats' upgrade (``store``) over the dual-column-family accessor they
share (``dual``)."""
