"""DML/DDL histories that stay consistent with their tables.

`HistoryBuilder` keeps the state a database would: live rows by handle key, values taken in
every unique index, the current version of each table, a TSO clock. Each step (create a
table, insert, update, delete, add/drop a column, truncate, rename) draws its choices from a
`Source` and appends a consistent event. The bulk sampler (`build_workload`) and hypothesis'
`RuleBasedStateMachine` (`machine.py`) drive the same steps.
"""

from __future__ import annotations

import decimal
from dataclasses import dataclass, field, replace

from ..model import events as ev
from ..model import table as tb
from ..model.dialects import Dialect, dialect
from ..model.sql import column_definition, create_table, qualified
from ..model.types import Kind, SqlType, quote_ident
from ..model.values import Infinity, Row, Value, is_float32
from .dialect_domains import Domain, domain_for
from .domains import ALL_KINDS, KEY_KINDS
from .names import NamePool, column_name, database_name, kafka_mangle, table_name
from .source import Source

# 2026-01-01T00:00:00Z: TSOs stay realistic (physical part in milliseconds).
EPOCH_MS = 1_767_225_600_000


@dataclass(frozen=True, slots=True)
class Shape:
    """Size and content knobs of a generated workload (inclusive ranges)."""

    databases: tuple[int, int] = (1, 2)
    tables: tuple[int, int] = (1, 3)
    columns: tuple[int, int] = (1, 8)
    transactions: tuple[int, int] = (1, 12)
    changes_per_transaction: tuple[int, int] = (1, 4)
    kinds: tuple[Kind, ...] = ALL_KINDS
    key_kinds: tuple[Kind, ...] = KEY_KINDS
    ddl_rate: float = 0.1
    ddl_kinds: tuple[ev.DdlKind, ...] = (ev.DdlKind.ADD_COLUMN, ev.DdlKind.DROP_COLUMN, ev.DdlKind.TRUNCATE_TABLE)
    watermark_rate: float = 0.3
    edge_rate: float = 0.2
    null_rate: float = 0.15
    default_rate: float = 0.3
    odd_name_rate: float = 0.25
    # Tables with generated columns (copies of another column, VIRTUAL or STORED), some of them
    # under a unique index that the handle-key choice must skip (spec/notes/ticdc.md §1.3, §3.2).
    generated_rate: float = 0.15
    max_rows_per_table: int = 40
    # Milliseconds of physical time between consecutive commits: time-driven behaviour (periodic
    # bootstraps, watermark intervals) needs workloads that span seconds or minutes.
    ms_per_step: tuple[int, int] = (1, 50)
    # The SQL dialect whose domain the values come from and whose SQL the DDL is written in
    # ("tidb", "mariadb", "postgresql"); `kinds` / `key_kinds` must be kinds it has.
    dialect: str = "tidb"
    # MariaDB workloads: (domain, server_id, last sequence) of the server they pretend to come
    # from. Each DDL and each transaction takes the next GTID (`Transaction.position`), as a
    # MariaDB server logs them; protocols that carry GTIDs (MaxScale KafkaCDC) need one per event.
    gtid_origin: tuple[int, int, int] = (0, 1, 0)
    # Schema changes chosen for their effect on a registered schema (`EVOLUTIONS`), drawn beside
    # `ddl_kinds` by protocols whose encoders register schemas: workloads that mean to evolve.
    evolutions: tuple[str, ...] = ()
    # PostgreSQL only (dialects with `Dialect.logical_messages`): the chance that a transaction
    # emits a logical decoding message (`pg_logical_emit_message`), transactional among its
    # changes or, one time in three, non-transactional on its own.
    message_rate: float = 0.0
    # The chance that a value of a column that can hold one (a domain's `large_value`: text,
    # bytea, json, arrays on PostgreSQL) is large and incompressible, so that the server stores it
    # out of line (TOAST) and an UPDATE that leaves it untouched does not log it again.
    large_value_rate: float = 0.0
    # The chance that the workload's CDC tool starts after some of its transactions (a
    # `CaptureStart` event): the rows they left are what a snapshot reads.
    capture_start_rate: float = 0.0

    def scaled(self, *, transactions: int | None = None, columns: int | None = None) -> Shape:
        s = self
        if transactions is not None:
            s = replace(s, transactions=(transactions, transactions))
        if columns is not None:
            s = replace(s, columns=(columns, columns))
        return s


DEFAULT_SHAPE = Shape()


def evolving(shape: Shape, evolutions: tuple[str, ...]) -> Shape:
    """`shape` for a protocol whose workloads mean to evolve (no change if it already names its
    own schema changes, as a mutant's shape may)."""
    if not evolutions or shape.evolutions:
        return shape
    return replace(shape, evolutions=evolutions, ddl_rate=max(shape.ddl_rate, EVOLVING_DDL_RATE))

#: Schema changes a workload may make for their effect on the next registered schema: a NOT NULL
#: column added without a default (existing rows take the type's zero value, as MySQL and TiDB
#: fill them), a column renamed, a type widened or narrowed (narrowed only where every stored
#: value fits), a column made nullable or NOT NULL (only without NULLs), its default changed,
#: and a dropped column's name re-added with another type. All but the last are TiDB's
#: `ALTER TABLE … MODIFY/RENAME COLUMN` (rendered in TiDB's SQL only).
EVOLUTIONS: tuple[str, ...] = ("add-required", "rename-column", "widen", "narrow", "nullability", "set-default",
                               "re-add")
#: The DDL rate of workloads that mean to evolve (a protocol with `evolutions`), unless a
#: higher one is asked for: about one schema change in every four transactions.
EVOLVING_DDL_RATE = 0.25
#: The ones other dialects' workloads make: PostgreSQL's ALTER COLUMN … TYPE (widening). A dropped
#: name re-added is TiDB's only: on PostgreSQL 18.6 the change log's old image of a row written
#: before the drop then carried the dropped column's value under the new column's name, and
#: Debezium 3.6.3 declared the re-added nullable column required — behaviour the model does not
#: follow yet.
PORTABLE_EVOLUTIONS: tuple[str, ...] = ("widen",)


def shape_for(dialect_name: str, base: Shape = DEFAULT_SHAPE, *, kinds: tuple[Kind, ...] | None = None) -> Shape:
    """`base` for another dialect: its domain's kinds (or `kinds`, e.g. TiDB's kinds only for a
    protocol that knows no others) and key kinds."""
    dom = domain_for(dialect_name)
    ks = dom.kinds if kinds is None else tuple(k for k in kinds if k in dom.kinds)
    key_kinds = tuple(k for k in dom.key_kinds if k in ks) or dom.key_kinds
    # Generated columns are modelled as TiDB writes and logs them (virtual ones never in row
    # events); MariaDB's and PostgreSQL's rules differ (PostgreSQL has no VIRTUAL), so their
    # workloads have none.
    generated = base.generated_rate if dialect_name == "tidb" else 0.0
    ddl = base.ddl_kinds
    if dialect_name == "postgresql" and ev.DdlKind.ADD_COLUMN in ddl and ev.DdlKind.MODIFY_COLUMN not in ddl:
        # ALTER COLUMN ... TYPE (widening): schema changes of every kind a PostgreSQL connector
        # follows (add, drop, retype) between the DML.
        ddl = (*ddl, ev.DdlKind.MODIFY_COLUMN)
    evolutions = base.evolutions if dialect_name == "tidb" else tuple(
        e for e in base.evolutions if e in PORTABLE_EVOLUTIONS and dialect_name == "postgresql")
    return replace(base, dialect=dialect_name, kinds=ks, key_kinds=key_kinds, generated_rate=generated,
                   ddl_kinds=ddl, evolutions=evolutions)


def sql_equal(t: SqlType, a: Value, b: Value) -> bool:
    """Whether SQL comparison sees the two values as equal (so an UPDATE is a no-op for the
    column): numeric equality (-0.0 = 0.0), PAD SPACE for non-binary strings."""
    if a is None or b is None:
        return a is b
    if isinstance(a, str) and isinstance(b, str) and not t.is_binary:
        return a.rstrip(" ") == b.rstrip(" ")
    if _is_nan(a) or _is_nan(b):
        return _is_nan(a) and _is_nan(b)  # PostgreSQL: NaN = NaN (numeric and float)
    return a == b


def _no_decimal(v: Value) -> bool:
    """PostgreSQL's numeric NaN and infinities: no decimal type of a consumer holds them (Debezium's
    precise mode writes null; in a NOT NULL column it stops), so NOT NULL columns never get them."""
    return isinstance(v, decimal.Decimal) and not v.is_finite()


def _special_default(v: Value) -> bool:
    """A default no connector's default-value parser is modelled for: an infinite date or
    timestamp, numeric NaN or an infinity (a NOT NULL column added with it would hold it)."""
    return isinstance(v, Infinity) or _no_decimal(v)


def _is_nan(v: Value) -> bool:
    return (isinstance(v, decimal.Decimal) and v.is_nan()) or (isinstance(v, float) and v != v)


@dataclass(slots=True)
class _TableState:
    table: tb.Table
    rows: dict[tuple[object, ...], Row] = field(default_factory=dict)
    # unique index name -> value tuples present (tuples with a NULL never conflict)
    uniques: dict[str, set[tuple[object, ...]]] = field(default_factory=dict)
    # Names of columns dropped from this table, never given to a new column. Re-adding a name
    # with another type makes the next Avro schema unreadable with the last registered one (the
    # registry's default BACKWARD compatibility refuses it, and TiCDC then stops the changefeed
    # by design: seed 000, "schema evolution"); found by a 1M-record benchmark run.
    retired: set[str] = field(default_factory=set)


# Kinds never added as NOT NULL columns: the next Avro schema would have a required field without
# a default, which the registry's default BACKWARD level refuses and the encoder then stops on by
# design (Schema Registry compatibility is issue 15's axis, not a hazard of every run). TiCDC's
# precise DECIMAL loses its default; Debezium's PostgreSQL connector carries none for numeric
# without scale or bytea (seen with 3.6.3 and its Avro converter: "Failed to serialize Avro data").
_NO_REQUIRED_ADD = frozenset({Kind.DECIMAL, Kind.NUMERIC, Kind.BYTEA})

# The value existing rows take when a NOT NULL column without a default is added (MySQL's and
# TiDB's implicit default of the type); kinds whose zero is plain.
_ZERO: dict[Kind, Value] = {Kind.TINYINT: 0, Kind.SMALLINT: 0, Kind.MEDIUMINT: 0, Kind.INT: 0, Kind.BIGINT: 0,
                            Kind.VARCHAR: "", Kind.TEXT: "", Kind.DOUBLE: 0.0}


def _widenable(t: SqlType) -> bool:
    return t.kind in (Kind.SMALLINT, Kind.INT) or (t.kind is Kind.FLOAT and t.precision is None) or (
        t.kind is Kind.VARCHAR and t.length is not None) or (
        t.kind is Kind.DECIMAL and t.precision is not None and t.precision < 65)


def _widened(t: SqlType, src: Source) -> SqlType | None:
    """A wider type that holds every value of `t` unchanged (None: none is modelled): a larger
    integer, a longer varchar or text, a decimal with more integer digits at the same scale, a
    double for a float (its values are float32 values, which a double holds exactly)."""
    k = t.kind
    if k is Kind.FLOAT:
        return SqlType(Kind.DOUBLE, unsigned=t.unsigned)
    if k is Kind.SMALLINT:
        return SqlType(src.choice((Kind.INT, Kind.BIGINT)))
    if k is Kind.INT:
        return SqlType(Kind.BIGINT)
    if k is Kind.VARCHAR and t.length is not None:
        if t.length >= 255 or src.rare(0.3):
            return SqlType(Kind.TEXT)
        return replace(t, length=t.length + src.integer(1, 64))
    if k is Kind.DECIMAL and t.precision is not None and t.precision < 65:
        return replace(t, precision=min(65, t.precision + src.integer(1, 8)))
    return None


def _indexable(t: SqlType, key_kinds: tuple[Kind, ...]) -> bool:
    """A type a secondary (unique) index may cover as the key sampler would make it: InnoDB
    cannot index CHAR(0) / BINARY(0) (MariaDB error 1167), and a long VARCHAR exceeds the
    3072-byte index limit (found by the source checks against a real MariaDB)."""
    if t.kind not in key_kinds:
        return False
    if t.kind in (Kind.CHAR, Kind.BINARY) and t.length == 0:
        return False
    return not (t.kind in (Kind.VARCHAR, Kind.VARBINARY) and (t.length or 0) > 191)


class HistoryBuilder:
    def __init__(self, src: Source, shape: Shape = DEFAULT_SHAPE, *, start_ms: int = EPOCH_MS) -> None:
        self.src = src
        self.shape = shape
        self.dialect: Dialect = dialect(shape.dialect)
        self.domain: Domain = domain_for(shape.dialect)
        # TiDB's SQL is written as it always was (same seed, same text); other dialects render
        # every DDL from its structure.
        self._tidb = shape.dialect == "tidb"
        self.events: list[ev.Event] = []
        self.names = NamePool()
        self.topic_keys: set[str] = set()
        self.databases: list[str] = []
        self.tables: dict[int, _TableState] = {}  # by table_id
        self._physical = start_ms
        self._last_ts = 0
        self._next_table_id = 100
        # Uncommitted transaction state
        self._pending: list[ev.RowChange] = []
        self._messages: list[ev.LogicalMessage] = []
        self._touched: set[tuple[int, tuple[object, ...]]] = set()
        self._freed: list[tuple[_TableState, Row]] = []
        # The last GTID given out (MariaDB only: other dialects' events carry no position).
        self._gtid: ev.Gtid | None = ev.Gtid(*shape.gtid_origin) if shape.dialect == "mariadb" else None

    def next_position(self) -> str | None:
        """The log position of the next event: MariaDB's next GTID (None for other dialects)."""
        if self._gtid is None:
            return None
        self._gtid = self._gtid.next()
        return str(self._gtid)

    # -- clock ----------------------------------------------------------------------------

    def next_ts(self) -> int:
        self._physical += self.src.integer(*self.shape.ms_per_step)
        ts = ev.tso(self._physical, self.src.integer(0, 3) if self.src.rare(0.2) else 0)
        if ts <= self._last_ts:
            ts = self._last_ts + 1
        self._last_ts = ts
        return ts

    # -- DDL ------------------------------------------------------------------------------

    def create_database(self) -> str:
        name = database_name(self.names, self.src, odd_rate=self.shape.odd_name_rate,
                             bmp_only=not self.dialect.supplementary_identifiers,
                             max_bytes=self.dialect.max_identifier_bytes,
                             supplementary=self.dialect.supplementary_table_names)
        self.databases.append(name)
        self._append_ddl(ev.Ddl(ev.DdlKind.CREATE_DATABASE, self.next_ts(),
                             f"CREATE DATABASE {quote_ident(name)};", database=name))
        return name

    def _append_ddl(self, ddl: ev.Ddl) -> None:
        if not self._tidb:
            ddl = replace(ddl, sql="\n".join(self.dialect.ddl_statements(ddl)), position=self.next_position())
        self.events.append(ddl)

    def _table_name(self, db: str) -> str:
        for _ in range(32):
            name = table_name(self.names, self.src, odd_rate=self.shape.odd_name_rate,
                              bmp_only=not self.dialect.supplementary_identifiers,
                              max_bytes=self.dialect.max_identifier_bytes,
                              supplementary=self.dialect.supplementary_table_names)
            key = kafka_mangle(f"{db}_{name}").casefold()
            if key not in self.topic_keys:
                self.topic_keys.add(key)
                return name
            self.names.release(name)
        raise RuntimeError("could not find a table name with a distinct topic")

    def _new_column(self, pool: NamePool, column_id: int, *, key: bool = False,
                    for_add: bool = False) -> tb.Column:
        src, shape = self.src, self.shape
        t = self.domain.sample_type(src, shape.key_kinds if key else shape.kinds, key=key)
        name = column_name(pool, src, odd_rate=shape.odd_name_rate, bmp_only=not self.dialect.supplementary_identifiers,
                           max_bytes=self.dialect.max_identifier_bytes)
        if key:
            nullable = False
        elif for_add:
            # NOT NULL only where a constant default can fill the existing rows (see _default).
            nullable = not (src.rare(0.3) and self.domain.default_allowed(t) and t.kind not in _NO_REQUIRED_ADD)
        else:
            nullable = src.boolean()
        default = self._default(t, nullable, required=for_add and not nullable, key=key, for_add=for_add)
        return tb.Column(name, t, nullable, default, column_id)

    def _default(self, t: SqlType, nullable: bool, *, required: bool, key: bool, for_add: bool = False) -> tb.Default:
        src = self.src
        literal_ok = self.domain.default_allowed(t) and not (required and t.kind is Kind.DECIMAL)
        if required:
            # ADD COLUMN ... NOT NULL needs a constant default: existing rows take it. (A
            # DECIMAL would lose its default in TiCDC Avro's precise mode, making the
            # schema change backward-incompatible, which TiCDC reports as an error by design.)
            assert literal_ok
            v = self.domain.sample_value(src, t, edge_rate=self.shape.edge_rate)
            return tb.Default(tb.DefaultKind.VALUE, self.domain.simplest_value(t) if _special_default(v) else v)
        if not src.rare(self.shape.default_rate) or key:
            return tb.NO_DEFAULT
        if t.kind in (Kind.DATETIME, Kind.TIMESTAMP) and t.fsp == 0 and src.rare(0.3) and not required \
                and (self._tidb or not for_add):
            # Not on ADD COLUMN outside TiDB's generation: the server fills the existing rows
            # with the current time, which the model cannot predict (MariaDB 10.11, PostgreSQL 18).
            return tb.DEFAULT_CURRENT_TIMESTAMP
        if nullable and (not literal_ok or src.boolean()):
            return tb.DEFAULT_NULL
        if not literal_ok:
            return tb.NO_DEFAULT
        null_text = _null_text(t)
        if null_text is not None and src.rare(0.1):
            # The text 'null': TiCDC v8.5.2-8.5.7 Avro mistook it for NULL (spec/notes/ticdc.md §1.4).
            return tb.Default(tb.DefaultKind.VALUE, null_text)
        v = self.domain.sample_value(src, t, edge_rate=self.shape.edge_rate)
        # An infinite date or timestamp as a default: what a connector makes of that expression is
        # not modelled (its values are).
        return tb.Default(tb.DefaultKind.VALUE, self.domain.simplest_value(t) if isinstance(v, Infinity) else v)

    def create_table(self, db: str | None = None) -> tb.Table:
        src, shape = self.src, self.shape
        db = db if db is not None else src.choice(self.databases)
        name = self._table_name(db)
        pool = NamePool()
        n_key = 1 if not src.rare(0.25) else 2
        n_cols = max(n_key, src.integer(*shape.columns))
        cols = [self._new_column(pool, i + 1, key=i < n_key) for i in range(n_cols)]
        key_names = tuple(c.name for c in cols[:n_key])
        # Key columns need not come first: shuffle ordinal positions, keep IDs.
        if len(cols) > 1 and src.boolean():
            i = src.integer(0, len(cols) - 1)
            cols.append(cols.pop(i))
        indexes: list[tb.Index] = []
        if src.rare(0.75):
            indexes.append(tb.Index("PRIMARY", key_names, primary=True, index_id=1))
        else:
            indexes.append(tb.Index(f"uk_{len(indexes) + 1}", key_names, unique=True, index_id=1))
        others = [c for c in cols if c.name not in key_names and _indexable(c.type, shape.key_kinds)]
        if others and src.rare(0.25):
            c = src.choice(others)
            indexes.append(tb.Index(f"uk_{c.name}"[:64], (c.name,), unique=True, index_id=2))
        if others and src.rare(0.15):
            c = src.choice(others)
            indexes.append(tb.Index(f"ix_{c.name}"[:64], (c.name,), index_id=3))
        if src.rare(shape.generated_rate):
            self._add_generated(pool, cols, indexes, key_names)
        table = tb.Table(db, name, tuple(cols), tuple(indexes), table_id=self._alloc_table_id(),
                      version=0)
        if self.dialect.schema_scoped_index_names:
            table = self._schema_scoped(table)
            indexes = list(table.indexes)
        ts = self.next_ts()
        table = table.evolve(version=ts)
        self.tables[table.table_id] = _TableState(table, uniques={ix.name: set() for ix in indexes if ix.is_unique})
        sql = create_table(table) if self._tidb else ""
        self._append_ddl(ev.Ddl(ev.DdlKind.CREATE_TABLE, ts, sql, table, None, db))
        return table

    def _schema_scoped(self, table: tb.Table) -> tb.Table:
        """PostgreSQL: index names unique in the schema, and a REPLICA IDENTITY that lets every
        UPDATE/DELETE be published (a table without a primary key needs FULL or USING INDEX)."""
        indexes = tuple(replace(ix, name=f"{'pk' if ix.primary else ix.name}_t{table.table_id}"[:63])
                        for ix in table.indexes)
        has_pk = any(ix.primary for ix in indexes)
        # USING INDEX only where the table has one unique index: with several, the WAL's old key
        # (the identity index) and Debezium's message key (the first unique index by name) may be
        # different indexes, which the model does not follow yet (seen with real Debezium 3.6.3:
        # a delete's before then lacks the key index's columns).
        single = sum(1 for ix in indexes if ix.is_unique) == 1
        choices = (tb.ReplicaIdentity.DEFAULT, tb.ReplicaIdentity.FULL) if has_pk else \
            (tb.ReplicaIdentity.FULL, tb.ReplicaIdentity.INDEX) if single else (tb.ReplicaIdentity.FULL,)
        return replace(table, indexes=indexes, replica_identity=self.src.choice(choices))

    def _add_generated(self, pool: NamePool, cols: list[tb.Column], indexes: list[tb.Index],
                       key_names: tuple[str, ...]) -> None:
        """One or two generated columns, each a copy of an ordinary column (`AS (`base`)`, same
        type: its value is the base's, whatever the type), VIRTUAL or STORED, at any ordinal
        position, with the next column IDs. Sometimes a NOT NULL virtual copy of the (single)
        key column gets a unique index defined first (lowest index ID): without a primary key,
        TiDB's handle-key choice would take it if it did not skip virtual columns."""
        src = self.src
        bases = [c for c in cols if c.generated is None and c.type.kind is not Kind.VECTOR]
        next_id = max(c.column_id for c in cols) + 1
        for i in range(1 if not src.rare(0.3) else 2):
            unique = (i == 0 and len(key_names) == 1 and src.rare(0.4))
            base = next(c for c in cols if c.name == key_names[0]) if unique else src.choice(bases)
            stored = not unique and src.rare(0.3)
            g = tb.Column(column_name(pool, src, odd_rate=self.shape.odd_name_rate), base.type, base.nullable,
                       tb.NO_DEFAULT, next_id + i, tb.Generated(quote_ident(base.name), stored, (base.name,)))
            cols.insert(src.integer(0, len(cols)), g)
            if unique:
                # Defined before the key's own index: renumber so that it has the lowest ID.
                indexes[:] = [tb.Index(ix.name, ix.columns, ix.primary, ix.unique, ix.index_id + 1) for ix in indexes]
                indexes.insert(0, tb.Index(f"uk_{g.name}"[:64], (g.name,), unique=True, index_id=1))

    def _alloc_table_id(self) -> int:
        self._next_table_id += self.src.integer(1, 3)
        return self._next_table_id

    def _replace_table(self, state: _TableState, new: tb.Table, kind: ev.DdlKind, sql: str, ts: int) -> None:
        old = state.table
        if new.table_id != old.table_id:
            del self.tables[old.table_id]
            self.tables[new.table_id] = state
        state.table = new
        self._append_ddl(ev.Ddl(kind, ts, sql, new, old, new.database))

    def add_column(self, state: _TableState, *, required: bool = False, readd: bool = False) -> bool:
        """ADD COLUMN; `required`: NOT NULL without a default (existing rows take the type's zero
        value); `readd`: under the name of a dropped column, with another type."""
        t = state.table
        pool = NamePool()
        for name in (*(c.name for c in t.columns), *state.retired):
            pool.take(name)
        col = self._new_column(pool, t.next_column_id(), for_add=True)
        if required:
            kinds = [k for k in self.shape.kinds if k in _ZERO and k in self.domain.kinds]
            if not kinds:
                return False
            k = self.src.choice(kinds)
            col = replace(col, type=self.domain.sample_type(self.src, (k,)), nullable=False, default=tb.NO_DEFAULT)
        if readd:
            names = sorted(n for n in state.retired if n not in {c.name for c in t.columns})
            if not names:
                return False
            name = self.src.choice(names)
            col = replace(col, name=name)
        cols = list(t.columns)
        pos = "" if not self.dialect.column_positions or not self.src.rare(0.3) \
            else self.src.choice(("FIRST", "AFTER"))
        if pos == "FIRST":
            cols.insert(0, col)
        elif pos == "AFTER":
            after = self.src.choice(t.columns)
            cols.insert(cols.index(after) + 1, col)
            pos = f"AFTER {quote_ident(after.name)}"
        else:
            cols.append(col)
        ts = self.next_ts()
        fill = col.default.value if col.default.kind is tb.DefaultKind.VALUE else None
        if required:
            fill = _ZERO[col.type.kind]
        for row in state.rows.values():
            row[col.name] = fill
        sql = f"ALTER TABLE {qualified(t)} ADD COLUMN {column_definition(col)}{' ' + pos if pos else ''};" \
            if self._tidb else ""
        self._replace_table(state, t.with_columns(cols, version=ts), ev.DdlKind.ADD_COLUMN, sql, ts)
        return True

    def drop_column(self, state: _TableState) -> bool:
        t = state.table
        indexed = {c for ix in t.indexes for c in ix.columns}
        # A server refuses to drop a column a generated column reads (MySQL error 3108).
        depended = {n for c in t.columns if c.generated is not None for n in c.generated.depends_on}
        candidates = [c for c in t.columns if c.name not in indexed and c.name not in depended]
        if not candidates or len(t.columns) < 2:
            return False
        col = self.src.choice(candidates)
        state.retired.add(col.name)
        ts = self.next_ts()
        for row in state.rows.values():
            del row[col.name]
        sql = f"ALTER TABLE {qualified(t)} DROP COLUMN {quote_ident(col.name)};"
        new = t.with_columns([c for c in t.columns if c.name != col.name], version=ts)
        self._replace_table(state, new, ev.DdlKind.DROP_COLUMN, sql, ts)
        return True

    def modify_column(self, state: _TableState) -> bool:
        """Widen one column's type (PostgreSQL's ALTER COLUMN ... TYPE): every stored value stays
        what it was, so the model's rows are unchanged; indexed and generated columns are left
        alone (a server rebuilds or refuses them)."""
        t = state.table
        indexed = {c for ix in t.indexes for c in ix.columns}
        depended = {n for c in t.columns if c.generated is not None for n in c.generated.depends_on}
        candidates = [c for c in t.columns if c.name not in indexed and c.name not in depended
                      and c.generated is None and _widenable(c.type)]
        if not candidates:
            return False
        col = self.src.choice(candidates)
        wider = _widened(col.type, self.src)
        assert wider is not None
        ts = self.next_ts()
        new_col = replace(col, type=wider)
        new = t.with_columns([new_col if c.name == col.name else c for c in t.columns], version=ts)
        sql = f"ALTER TABLE {qualified(t)} MODIFY COLUMN {column_definition(new_col)};" if self._tidb else ""
        self._replace_table(state, new, ev.DdlKind.MODIFY_COLUMN, sql, ts)
        return True

    # -- schema changes for their effect on a registered schema (Shape.evolutions) ----------------

    def evolve(self, state: _TableState, what: str) -> bool:
        if what == "add-required":
            return self.add_column(state, required=True)
        if what == "re-add":
            return self.add_column(state, readd=True)
        if what == "widen":
            return self.modify_column(state)
        if not self._tidb:
            return False  # rendered in TiDB's SQL only (see EVOLUTIONS)
        cols = self._plain_columns(state.table)
        if not cols:
            return False
        col = self.src.choice(cols)
        new: tb.Column | None
        if what == "rename-column":
            pool = NamePool()
            for name in (*(c.name for c in state.table.columns), *state.retired):
                pool.take(name)
            new = replace(col, name=column_name(pool, self.src, odd_rate=self.shape.odd_name_rate))
        elif what == "narrow":
            new = self._narrowed(state, col)
        elif what == "nullability":
            if col.nullable:
                if any(row.get(col.name) is None for row in state.rows.values()):
                    return False
                new = replace(col, nullable=False,
                              default=tb.NO_DEFAULT if col.default.kind is tb.DefaultKind.NULL else col.default)
            else:
                new = replace(col, nullable=True)
        elif what == "set-default":
            if not self.domain.default_allowed(col.type) or col.type.kind in (Kind.DECIMAL, Kind.DATETIME,
                                                                              Kind.TIMESTAMP):
                return False
            value = self.domain.sample_value(self.src, col.type, edge_rate=self.shape.edge_rate)
            if _special_default(value) or (not col.nullable and _no_decimal(value)):
                value = self.domain.simplest_value(col.type)
            new = replace(col, default=tb.Default(tb.DefaultKind.VALUE, value))
        else:
            raise ValueError(f"unknown schema change {what!r}")
        if new is None or new == col:
            return False
        return self._change_column(state, col, new)

    def _plain_columns(self, t: tb.Table) -> list[tb.Column]:
        """Columns a MODIFY/RENAME COLUMN may touch: not indexed, not generated, no generated
        column reads them."""
        indexed = {c for ix in t.indexes for c in ix.columns}
        depended = {n for c in t.columns if c.generated is not None for n in c.generated.depends_on}
        return [c for c in t.columns if c.name not in indexed and c.name not in depended and c.generated is None]

    def _narrowed(self, state: _TableState, col: tb.Column) -> tb.Column | None:
        """A narrower type that still holds every stored value (a server refuses the change otherwise)."""
        t, values = col.type, [row.get(col.name) for row in state.rows.values()]
        present = [v for v in values if v is not None]
        order = (Kind.TINYINT, Kind.SMALLINT, Kind.MEDIUMINT, Kind.INT, Kind.BIGINT)
        if t.kind in order[1:]:
            for k in order[:order.index(t.kind)][::-1]:
                lo, hi = SqlType(k, unsigned=t.unsigned).int_range()
                if all(isinstance(v, int) and lo <= v <= hi for v in present):
                    return replace(col, type=SqlType(k, unsigned=t.unsigned), default=self._fitting_default(col, k))
            return None
        if t.kind is Kind.DOUBLE and not t.unsigned and all(isinstance(v, float) and is_float32(v) for v in present):
            default = tb.NO_DEFAULT if col.default.kind is tb.DefaultKind.VALUE else col.default
            return replace(col, type=SqlType(Kind.FLOAT), default=default)
        if t.kind is Kind.VARCHAR and t.length is not None:
            longest = max((len(v) for v in present if isinstance(v, str)), default=0)
            # A narrower length that still holds the longest value (none narrower than 1: a
            # VARCHAR(1) holding only '' stays as it is; the long soak found integer(1, 0)).
            if max(longest, 1) < t.length:
                return replace(col, type=replace(t, length=self.src.integer(max(longest, 1), t.length - 1)),
                               default=tb.NO_DEFAULT if col.default.kind is tb.DefaultKind.VALUE else col.default)
        return None

    def _fitting_default(self, col: tb.Column, k: Kind) -> tb.Default:
        d = col.default
        if d.kind is tb.DefaultKind.VALUE:
            lo, hi = SqlType(k, unsigned=col.type.unsigned).int_range()
            if not (isinstance(d.value, int) and lo <= d.value <= hi):
                return tb.NO_DEFAULT
        return d

    def _change_column(self, state: _TableState, col: tb.Column, new: tb.Column) -> bool:
        t = state.table
        ts = self.next_ts()
        if new.name != col.name:
            for row in state.rows.values():
                row[new.name] = row.pop(col.name)
            sql = f"ALTER TABLE {qualified(t)} RENAME COLUMN {quote_ident(col.name)} TO {quote_ident(new.name)};"
        else:
            sql = f"ALTER TABLE {qualified(t)} MODIFY COLUMN {column_definition(new)};"
        table = t.with_columns([new if c.name == col.name else c for c in t.columns], version=ts)
        self._replace_table(state, table, ev.DdlKind.MODIFY_COLUMN, sql, ts)
        return True

    def truncate_table(self, state: _TableState) -> bool:
        t = state.table
        ts = self.next_ts()
        state.rows.clear()
        for s in state.uniques.values():
            s.clear()
        new = t.evolve(table_id=self._alloc_table_id(), version=ts)
        self._replace_table(state, new, ev.DdlKind.TRUNCATE_TABLE, f"TRUNCATE TABLE {qualified(t)};", ts)
        return True

    def rename_table(self, state: _TableState) -> bool:
        t = state.table
        name = self._table_name(t.database)
        # TiDB keeps the schema version (UpdateTS) across RENAME TABLE (seed 002, "TableSchema"):
        # consumers then know the renamed table by its new name and the old version.
        ts = self.next_ts()
        new = t.evolve(name=name)
        sql = f"RENAME TABLE {qualified(t)} TO {qualified(new)};"
        self._replace_table(state, new, ev.DdlKind.RENAME_TABLE, sql, ts)
        return True

    def random_ddl(self) -> bool:
        if not self.tables or not self.shape.ddl_kinds or self._pending:
            return False
        state = self.src.choice(list(self.tables.values()))
        if self.shape.evolutions and self.src.rare(0.6):
            return self.evolve(state, self.src.choice(self.shape.evolutions))
        kind = self.src.choice(self.shape.ddl_kinds)
        return {
            ev.DdlKind.ADD_COLUMN: self.add_column,
            ev.DdlKind.DROP_COLUMN: self.drop_column,
            ev.DdlKind.TRUNCATE_TABLE: self.truncate_table,
            ev.DdlKind.RENAME_TABLE: self.rename_table,
            ev.DdlKind.MODIFY_COLUMN: self.modify_column,
        }[kind](state)

    # -- DML ------------------------------------------------------------------------------

    def _key(self, t: tb.Table, row: Row) -> tuple[object, ...]:
        return tuple(row[c.name] for c in t.handle_key_columns())

    def _unique_tuples(self, t: tb.Table, row: Row) -> dict[str, tuple[object, ...] | None]:
        out: dict[str, tuple[object, ...] | None] = {}
        for ix in t.unique_indexes():
            vals = tuple(_uniq_norm(t.column(c).type, row[c]) for c in ix.columns)
            out[ix.name] = None if any(v is None for v in vals) else vals
        return out

    def _fits(self, state: _TableState, row: Row, ignore: Row | None = None) -> bool:
        mine = self._unique_tuples(state.table, row)
        theirs = self._unique_tuples(state.table, ignore) if ignore is not None else {}
        for name, tup in mine.items():
            if tup is None or theirs.get(name) == tup:
                continue
            if tup in state.uniques[name]:
                return False
        return True

    def _claim(self, state: _TableState, row: Row) -> None:
        for name, tup in self._unique_tuples(state.table, row).items():
            if tup is not None:
                state.uniques[name].add(tup)

    def _new_row(self, t: tb.Table) -> Row:
        src, shape = self.src, self.shape
        key_cols = t.unique_key_column_names()
        handle = {c.name for c in t.handle_key_columns()}
        row: Row = {}
        for c in t.columns:
            if c.generated is not None:
                continue
            if c.nullable and c.name not in handle and src.rare(shape.null_rate):
                row[c.name] = None
            else:
                row[c.name] = self._value(t, c, key=c.name in key_cols)
        return _computed(t, row)

    def _value(self, t: tb.Table, c: tb.Column, *, key: bool) -> Value:
        """A value for column `c`: now and then a large one where the domain has them (never in
        an indexed column: an index entry cannot hold it)."""
        src, shape = self.src, self.shape
        if shape.large_value_rate and self.domain.large_value is not None and not key \
                and src.rare(shape.large_value_rate) and not any(c.name in ix.columns for ix in t.indexes):
            v = self.domain.large_value(src, c.type)
            if v is not None:
                return v
        v = self.domain.sample_value(src, c.type, edge_rate=shape.edge_rate, key=key)
        return self.domain.simplest_value(c.type) if not c.nullable and _no_decimal(v) else v

    def insert(self, state: _TableState) -> bool:
        t = state.table
        if len(state.rows) >= self.shape.max_rows_per_table:
            return False
        for _ in range(8):
            row = self._new_row(t)
            k = self._key(t, row)
            if k not in state.rows and (t.table_id, k) not in self._touched and self._fits(state, row):
                break
        else:
            return False
        state.rows[k] = row
        self._claim(state, row)
        self._touched.add((t.table_id, k))
        self._pending.append(ev.RowChange(ev.Op.INSERT, t, None, dict(row)))
        return True

    def _pick_row(self, state: _TableState) -> tuple[tuple[object, ...], Row] | None:
        t = state.table
        keys = [k for k in state.rows if (t.table_id, k) not in self._touched]
        if not keys:
            return None
        k = self.src.choice(keys)
        return k, state.rows[k]

    def update(self, state: _TableState) -> bool:
        picked = self._pick_row(state)
        if picked is None:
            return False
        old_key, old = picked
        t = state.table
        src = self.src
        key_cols = t.unique_key_column_names()
        handle = {c.name for c in t.handle_key_columns()}
        changeable = [c for c in t.columns if c.name not in key_cols and c.generated is None]
        # Mostly plain updates; sometimes (or when nothing else can change) key columns too,
        # which TiCDC splits into a delete and an insert.
        settable = [c for c in t.columns if c.generated is None]
        candidates = settable if (src.rare(0.15) or not changeable) else changeable
        big = {c.name for c in t.columns
               if old.get(c.name) is not None and self.dialect.stored_out_of_line(old[c.name])}
        for _ in range(8):
            new = dict(old)
            # A value the server keeps out of line is mostly left alone (an UPDATE of the other
            # columns: the change log then lacks it); elsewhere every column is a coin flip.
            cols = [c for c in candidates if (src.rare(0.2) if c.name in big else src.boolean())] \
                or [src.choice(candidates)]
            for c in cols:
                if c.nullable and c.name not in handle and src.rare(self.shape.null_rate):
                    v: Value = None
                else:
                    v = self._value(t, c, key=c.name in key_cols)
                # An assignment SQL sees as "unchanged" keeps the stored value as it was.
                new[c.name] = old[c.name] if sql_equal(c.type, old[c.name], v) else v
            new = _computed(t, new)
            if any(new[c.name] is not old[c.name] for c in t.columns):
                new_key = self._key(t, new)
                if new_key == old_key or (new_key not in state.rows and (t.table_id, new_key) not in self._touched):
                    if self._fits(state, new, ignore=old):
                        break
        else:
            return False
        del state.rows[old_key]
        state.rows[new_key] = new
        self._freed.append((state, old))
        self._claim(state, new)
        self._touched.update({(t.table_id, old_key), (t.table_id, new_key)})
        self._pending.append(ev.RowChange(ev.Op.UPDATE, t, dict(old), dict(new), self.dialect.unlogged(t, old, new)))
        return True

    def delete(self, state: _TableState) -> bool:
        picked = self._pick_row(state)
        if picked is None:
            return False
        k, old = picked
        del state.rows[k]
        self._freed.append((state, old))
        self._touched.add((state.table.table_id, k))
        self._pending.append(ev.RowChange(ev.Op.DELETE, state.table, dict(old), None))
        return True

    def random_change(self) -> bool:
        if not self.tables:
            return False
        state = self.src.choice(list(self.tables.values()))
        if not state.rows:
            return self.insert(state)
        op = self.src.integer(0, 9)
        if op < 5:
            return self.insert(state) or self.update(state)
        if op < 8:
            return self.update(state)
        return self.delete(state)

    def commit(self) -> ev.Transaction | None:
        """Commit the pending changes (and messages) as one transaction (None if there are none)."""
        if not self._pending and not self._messages:
            return None
        txn = ev.Transaction(self.next_ts(), tuple(self._pending), position=self.next_position(),
                          messages=tuple(sorted(self._messages, key=lambda m: m.index)))
        self._messages = []
        # Unique values freed by this transaction's updates/deletes become available now,
        # unless a live row still holds them.
        for state, old in self._freed:
            live = [self._unique_tuples(state.table, r) for r in state.rows.values()]
            for name, tup in self._unique_tuples(state.table, old).items():
                if tup is not None and all(other.get(name) != tup for other in live):
                    state.uniques[name].discard(tup)
        self._pending, self._touched, self._freed = [], set(), []
        self.events.append(txn)
        return txn

    def transaction(self) -> ev.Transaction | None:
        n = self.src.integer(*self.shape.changes_per_transaction)
        for _ in range(n):
            self.random_change()
        if self.shape.message_rate and self.dialect.logical_messages and self.src.rare(self.shape.message_rate):
            if self.src.rare(0.33):
                # Non-transactional: decoded at once, before this transaction's commit (the model
                # gives it a transaction of its own, without changes).
                self.events.append(ev.Transaction(self.next_ts(), (), position=self.next_position(),
                                               messages=(self._message(transactional=False),)))
            else:
                self._messages.append(self._message(transactional=True, index=self.src.integer(0, len(self._pending))))
        return self.commit()

    def _message(self, *, transactional: bool, index: int = 0) -> ev.LogicalMessage:
        src = self.src
        prefix = src.choice(_MESSAGE_PREFIXES)
        if src.boolean():
            content = src.text(min_size=0, max_size=40, allow_nul=False).encode("utf-8")
        else:
            content = src.binary(min_size=0, max_size=24)
        return ev.LogicalMessage(prefix, content, transactional, index)

    def capture_start(self) -> None:
        """The CDC tool starts now: the database it finds is every table's current version with
        its rows (in the model's order: insertion, an updated row moved to the end)."""
        tables = tuple((st.table, tuple(dict(r) for r in st.rows.values())) for st in self.tables.values())
        self.events.append(ev.CaptureStart(self.next_ts(), tables))

    def watermark(self) -> None:
        if self._last_ts:
            self.events.append(ev.Watermark(self._last_ts))

    # -- whole workloads --------------------------------------------------------------------

    def build(self, *, seed: int | str | None = None, shard: int | None = None) -> ev.Workload:
        src, shape = self.src, self.shape
        for _ in range(src.integer(*shape.databases)):
            self.create_database()
        for _ in range(src.integer(*shape.tables)):
            self.create_table()
        n = src.integer(*shape.transactions)
        # Where the CDC tool starts (PostgreSQL workloads of protocols that model it): the
        # transactions before it left rows a snapshot reads; none: it sees everything.
        start_at = src.integer(0, n - 1) if n and shape.capture_start_rate and src.rare(shape.capture_start_rate) \
            else None
        for i in range(n):
            if i == start_at:
                self.capture_start()
            if src.rare(shape.ddl_rate):
                self.random_ddl()
            self.transaction()
            if src.rare(shape.watermark_rate):
                self.watermark()
        self.watermark()
        meta: dict[str, object] = {} if self._tidb else {"dialect": self.shape.dialect}
        return ev.Workload(tuple(self.events), seed, shard, meta)


# Prefixes of generated logical decoding messages (any text; a consumer routes on them).
_MESSAGE_PREFIXES = ("pfx", "outbox", "audit.v1", "ü-prefix", "😀", "with space", "a'b")


def _null_text(t: SqlType) -> Value:
    """The value 'null' in a column of type `t`, if it can hold it (None if not)."""
    if t.kind in (Kind.CHAR, Kind.VARCHAR) and (t.length or 0) >= 4:
        return "null"
    if t.kind is Kind.ENUM and "null" in t.elements:
        return "null"
    if t.kind is Kind.SET and "null" in t.elements:
        return ("null",)
    return None


def _computed(t: tb.Table, row: Row) -> Row:
    """The row with its generated columns computed (each copies the column it reads)."""
    for c in t.columns:
        if c.generated is not None:
            row[c.name] = row[c.generated.depends_on[0]]
    return row


def _uniq_norm(t: SqlType, v: Value) -> object:
    """Value as a unique index compares it (PAD SPACE strings; exact Decimal values)."""
    if isinstance(v, str) and not t.is_binary:
        return v.rstrip(" ")
    if _is_nan(v):
        return ("NaN",)  # one value to a unique index, as PostgreSQL compares NaN
    if isinstance(v, decimal.Decimal):
        return v.normalize()
    return v


def build_workload(src: Source, shape: Shape = DEFAULT_SHAPE, *, seed: int | str | None = None,
                   shard: int | None = None) -> ev.Workload:
    return HistoryBuilder(src, shape).build(seed=seed, shard=shard)
