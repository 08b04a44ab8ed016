"""Java Paimon 0.9's own streaming read (DataTableStreamScan) of an (id INT, p STRING, v STRING) table, run in the
oracle's JVM: the tests compare our stream reads with it row for row."""

from __future__ import annotations

import json

# The plans from the scan options until one comes back empty, as one JSON line of [plan, row kind, id, p, v]
# (plan 0 is the starting scan).
JAVA_STREAM_READ = '''
import json
t = table._j_table.copy(SCAN_OPTIONS)
scan = t.newStreamScan()
read = t.newRead()
out = []
for n in range(100):
    splits = scan.plan().splits()
    if splits.isEmpty() and n > 0:
        break
    for split in splits:
        reader = read.createReader(split)
        it = reader.readBatch()
        while it is not None:
            row = it.next()
            while row is not None:
                out.append([n, str(row.getRowKind().shortString()), row.getInt(0), row.getString(1).toString(),
                            row.getString(2).toString()])
                row = it.next()
            it.releaseBatch()
            it = reader.readBatch()
        reader.close()
print(json.dumps(out))
'''


def java_stream_plans(java_oracle, path: str, scan_options: dict[str, str]) -> list[tuple]:
    """(plan, row kind, id, p, v) for each row Java's stream scan gives, in its order."""
    out = java_oracle.exec(path, JAVA_STREAM_READ.replace("SCAN_OPTIONS", repr(scan_options)))
    return [tuple(r) for r in json.loads(out.strip().splitlines()[-1])]
