"""Operations over a store table: queries, the change feed, compaction, maintenance."""
