"""The log: commit records, storage backends, paths, specs and changelog files. Imports
nothing of the table, the caches or the operations."""
