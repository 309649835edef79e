"""Kafka Streams interop: changelog records and state directories in and out of a store."""
