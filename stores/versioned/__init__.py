"""``versioned``: Kafka's ``VersionedKeyValueStore`` (KIP-889, KIP-960/968)."""
