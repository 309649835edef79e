"""Kafka Streams interop: a store as changelog records and back (``changelog``, ``records``),
and as a Kafka Streams state directory and back (``state_dir``)."""
