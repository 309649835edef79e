"""``timestamped``: Kafka's ``TimestampedKeyValueStore[WithHeaders]`` (KIP-258, KIP-1271)."""
