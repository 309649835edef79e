package statestore.harness;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.NullNode;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.DBOptions;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;

/**
 * Every entry of every column family of every RocksDB under a task directory, read with
 * {@code RocksDB.openReadOnly} after Kafka closed its stores (Kafka 4.3 writes without WAL and no longer
 * flushes on commit, so the data reaches the SST files only when RocksDB closes).
 *
 * <p>A DB directory is {@code rocksdb/<store>} (key-value, timestamped, versioned: segment null) or
 * {@code <store>/<store>.<n>} (window and session segments: segment {@code n / segmentInterval}).
 */
final class ColumnFamilyDump {
    static final String OFFSETS = "offsets";

    final ArrayNode entries = Codec.F.arrayNode();
    final ArrayNode dbs = Codec.F.arrayNode();

    static ColumnFamilyDump of(final File taskDir, final Long segmentInterval) throws RocksDBException {
        final ColumnFamilyDump dump = new ColumnFamilyDump();
        final List<File> dirs = new ArrayList<>();
        findDbs(taskDir, dirs);
        dirs.sort(null);
        for (final File dir : dirs) {
            dump.read(taskDir, dir, segmentOf(dir, segmentInterval));
        }
        return dump;
    }

    private static void findDbs(final File dir, final List<File> out) {
        final File[] children = dir.listFiles();
        if (children == null) {
            return;
        }
        if (new File(dir, "CURRENT").isFile()) {
            out.add(dir);
            return;
        }
        for (final File child : children) {
            if (child.isDirectory()) {
                findDbs(child, out);
            }
        }
    }

    private static Long segmentOf(final File dir, final Long segmentInterval) {
        final String parent = dir.getParentFile().getName();
        final String name = dir.getName();
        if (parent.equals("rocksdb") || !name.startsWith(parent + ".")) {
            return null;
        }
        final long start = Long.parseLong(name.substring(parent.length() + 1));
        if (segmentInterval == null) {
            throw new IllegalStateException("segment directory " + dir + " but the variant has no segment interval");
        }
        return start / segmentInterval;
    }

    private void read(final File taskDir, final File dir, final Long segment) throws RocksDBException {
        final List<byte[]> names;
        try (Options options = new Options()) {
            names = RocksDB.listColumnFamilies(options, dir.getAbsolutePath());
        }
        final List<ColumnFamilyDescriptor> descriptors = new ArrayList<>();
        for (final byte[] n : names) {
            descriptors.add(new ColumnFamilyDescriptor(n));
        }
        final List<ColumnFamilyHandle> handles = new ArrayList<>();
        final ArrayNode cfNames = Codec.F.arrayNode();
        try (DBOptions options = new DBOptions();
             RocksDB db = RocksDB.openReadOnly(options, dir.getAbsolutePath(), descriptors, handles)) {
            try {
                for (int i = 0; i < handles.size(); i++) {
                    final String cf = new String(names.get(i), StandardCharsets.UTF_8);
                    cfNames.add(cf);
                    if (cf.equals(OFFSETS)) {
                        continue;
                    }
                    try (RocksIterator it = db.newIterator(handles.get(i))) {
                        for (it.seekToFirst(); it.isValid(); it.next()) {
                            final ArrayNode row = Codec.F.arrayNode();
                            row.add(segment == null ? NullNode.getInstance() : Codec.F.numberNode(segment));
                            row.add(cf).add(Codec.hex(it.key())).add(Codec.hex(it.value()));
                            entries.add(row);
                        }
                        it.status();
                    }
                }
            } finally {
                for (final ColumnFamilyHandle h : handles) {
                    h.close();
                }
            }
        }
        final ArrayNode db = Codec.F.arrayNode();
        db.add(segment == null ? NullNode.getInstance() : Codec.F.numberNode(segment));
        db.add(taskDir.toPath().relativize(dir.toPath()).toString());
        db.add(cfNames);
        dbs.add(db);
    }
}
