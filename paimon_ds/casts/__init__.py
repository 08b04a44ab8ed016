"""Reading a column written under an older type: Paimon's whole cast table, with Java's semantics.

``ALTER TABLE ... ALTER COLUMN ... TYPE`` changes a column to any type Paimon's cast table reaches; files written
before keep the old type and readers cast each value with the rule's Java semantics (Paimon's ``casting``
package and the ``BinaryStringUtils`` / ``DecimalUtils`` / ``DateTimeUtils`` helpers it uses).

- ``rules``: which casts Paimon allows (``castable``) and which rule reads each pair (``resolve``);
- ``column``: the read-side cast of a whole column (``cast_column``), dispatching to the rule's executor;
- the executors, by family: ``numeric`` (numbers, DECIMAL, BOOLEAN), ``to_string`` (to CHAR / VARCHAR / STRING),
  ``from_string`` (strings parsed, binaries cut or padded), ``temporal`` (DATE, TIME, timestamps, the local zone);
- ``java`` (Java's primitive arithmetic and float printing) and ``arrays`` (null masks), which they share.
"""
