"""Row filters for Spark-free scans: a SQL-like string (`parse_filter`) or Python operators on `col(name)`.

A filter binds to a table's Arrow schema (`bind_filter`), which coerces each literal to its column's type and
gives two things: an exact Arrow expression that the scan applies to every row, and the weaker core predicate
(predicates.py) that prunes partitions and files. The predicate is implied by the filter (every row the filter
keeps, it keeps), so pruning never drops a row the expression would keep.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import EXIT_BAD_INPUT, PaimonDsError
from .predicates import Leaf, Or, Predicate, and_all, float_comparison


class FilterError(PaimonDsError, ValueError):
    """A filter that does not parse, names a column the table lacks, or compares a column with a literal of a
    type it cannot take; nothing was read."""

    exit_code = EXIT_BAD_INPUT


# ------------------------------------------------------------------ the expression tree
_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}  # a op b  <=>  b flip(op) a
_NEGATE = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


class Expr:
    """A boolean filter; combine with `&`, `|` and `~` (Python's and / or / not cannot be overloaded)."""

    def __and__(self, other: Expr) -> Expr:
        return AndExpr((self, _expr(other)))

    def __or__(self, other: Expr) -> Expr:
        return OrExpr((self, _expr(other)))

    def __invert__(self) -> Expr:
        return NotExpr(self)

    def __bool__(self) -> bool:
        raise FilterError("a filter has no truth value: combine filters with & | ~ (not and / or / not), "
                          "and parenthesize comparisons: (col('a') > 1) & (col('b') < 2)")

    def sql(self) -> str:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<filter {self.sql()}>"


@dataclass(frozen=True, eq=False, repr=False)
class Literal:
    value: Any
    kind: str | None = None  # "date" / "timestamp": a typed SQL literal (DATE '...'), parsed at bind time

    def sql(self) -> str:
        if self.value is None:
            return "NULL"
        if self.kind is not None:
            return f"{self.kind.upper()} '{self.value}'"
        if isinstance(self.value, dt.datetime):
            return f"TIMESTAMP '{self.value}'"
        if isinstance(self.value, dt.date):
            return f"DATE '{self.value}'"
        if isinstance(self.value, str):
            return "'" + self.value.replace("'", "''") + "'"
        if isinstance(self.value, bool):
            return "TRUE" if self.value else "FALSE"
        return repr(self.value) if isinstance(self.value, (int, float)) else f"'{self.value}'"


class Column:
    """A column of the table in a filter: `col("id") > 5`, `col("day").between(a, b)`, `col("x").isin([...])`."""

    __hash__ = None  # type: ignore[assignment]  # == builds a filter, so columns are not dict keys

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise FilterError(f"a column name must be a non-empty string, got {name!r}")
        self.name = name

    def _compare(self, op: str, other: Any) -> Expr:
        return Compare(op, self, other if isinstance(other, Column) else _literal(other))

    def __eq__(self, other: Any) -> Expr:  # type: ignore[override]
        return self._compare("=", other)

    def __ne__(self, other: Any) -> Expr:  # type: ignore[override]
        return self._compare("!=", other)

    def __lt__(self, other: Any) -> Expr:
        return self._compare("<", other)

    def __le__(self, other: Any) -> Expr:
        return self._compare("<=", other)

    def __gt__(self, other: Any) -> Expr:
        return self._compare(">", other)

    def __ge__(self, other: Any) -> Expr:
        return self._compare(">=", other)

    def isin(self, values: Iterable[Any]) -> Expr:
        if isinstance(values, (str, bytes)):
            raise FilterError(f"isin takes a list of values, got the single value {values!r}")
        return InList(self, tuple(_literal(v) for v in values))

    def is_null(self) -> Expr:
        return IsNull(self)

    def is_not_null(self) -> Expr:
        return IsNull(self, negated=True)

    def between(self, low: Any, high: Any) -> Expr:
        """low <= column <= high (SQL's BETWEEN, both ends included)."""
        return AndExpr((self >= low, self <= high))

    def sql(self) -> str:
        return self.name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*", self.name) and \
            self.name.upper() not in _KEYWORDS else "`" + self.name.replace("`", "``") + "`"

    def __repr__(self) -> str:
        return f"col({self.name!r})"


def col(name: str) -> Column:
    """A column of the table, for filters written with Python operators: `(col("id") > 5) & col("x").is_null()`."""
    return Column(name)


def _literal(value: Any) -> Literal:
    if isinstance(value, (Expr, Literal)):
        raise FilterError(f"a column is compared with a value or another column, not with {value!r}")
    return Literal(value)


def _expr(value: Any) -> Expr:
    if not isinstance(value, Expr):
        raise FilterError(f"& and | combine filters; got {value!r}")
    return value


@dataclass(frozen=True, eq=False, repr=False)
class Compare(Expr):
    op: str  # = != < <= > >=
    left: Column
    right: Column | Literal

    def sql(self) -> str:
        return f"{self.left.sql()} {self.op} {self.right.sql()}"


@dataclass(frozen=True, eq=False, repr=False)
class InList(Expr):
    column: Column
    values: tuple[Literal, ...]
    negated: bool = False

    def sql(self) -> str:
        return f"{self.column.sql()} {'NOT IN' if self.negated else 'IN'} ({', '.join(v.sql() for v in self.values)})"


@dataclass(frozen=True, eq=False, repr=False)
class IsNull(Expr):
    column: Column
    negated: bool = False

    def sql(self) -> str:
        return f"{self.column.sql()} IS {'NOT ' if self.negated else ''}NULL"


@dataclass(frozen=True, eq=False, repr=False)
class NotExpr(Expr):
    child: Expr

    def sql(self) -> str:
        return f"NOT ({self.child.sql()})"


@dataclass(frozen=True, eq=False, repr=False)
class AndExpr(Expr):
    children: tuple[Expr, ...]

    def sql(self) -> str:
        return " AND ".join(f"({c.sql()})" if isinstance(c, OrExpr) else c.sql() for c in self.children)


@dataclass(frozen=True, eq=False, repr=False)
class OrExpr(Expr):
    children: tuple[Expr, ...]

    def sql(self) -> str:
        return " OR ".join(c.sql() for c in self.children)


# ------------------------------------------------------------------ the SQL-like parser
_KEYWORDS = {"AND", "OR", "NOT", "IN", "IS", "NULL", "BETWEEN", "TRUE", "FALSE"}
_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<number>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
  | (?P<string>'(?:[^']|'')*')
  | (?P<quoted>`(?:[^`]|``)+`|"(?:[^"]|"")+")
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<op><=|>=|<>|!=|==|=|<|>|\(|\)|,|-|\+)
""", re.VERBOSE)


@dataclass(frozen=True)
class _Token:
    kind: str  # number string quoted word op end
    text: str
    pos: int

    @property
    def keyword(self) -> str | None:
        return self.text.upper() if self.kind == "word" else None


def _tokens(text: str) -> list[_Token]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise FilterError(f"syntax error in filter {text!r} at position {pos}: unexpected {text[pos]!r}")
        if m.lastgroup != "ws":
            out.append(_Token(m.lastgroup, m.group(), pos))
        pos = m.end()
    out.append(_Token("end", "", len(text)))
    return out


class _Parser:
    """Recursive descent: or := and (OR and)*; and := not (AND not)*; not := NOT not | '(' or ')' | predicate."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.i = 0

    @property
    def peek(self) -> _Token:
        return self.tokens[self.i]

    def next(self) -> _Token:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def error(self, expected: str) -> FilterError:
        tok = self.peek
        got = "the end" if tok.kind == "end" else repr(tok.text)
        return FilterError(f"syntax error in filter {self.text!r} at position {tok.pos}: expected {expected}, "
                           f"got {got}")

    def accept(self, keyword: str) -> bool:
        if self.peek.keyword == keyword or (self.peek.kind == "op" and self.peek.text == keyword):
            self.i += 1
            return True
        return False

    def expect(self, keyword: str) -> None:
        if not self.accept(keyword):
            raise self.error(repr(keyword))

    def parse(self) -> Expr:
        if self.peek.kind == "end":
            raise FilterError("the filter is empty")
        expr = self.or_()
        if self.peek.kind != "end":
            raise self.error("AND, OR or the end of the filter")
        return expr

    def or_(self) -> Expr:
        children = [self.and_()]
        while self.accept("OR"):
            children.append(self.and_())
        return children[0] if len(children) == 1 else OrExpr(tuple(children))

    def and_(self) -> Expr:
        children = [self.not_()]
        while self.accept("AND"):
            children.append(self.not_())
        return children[0] if len(children) == 1 else AndExpr(tuple(children))

    def not_(self) -> Expr:
        if self.accept("NOT"):
            return NotExpr(self.not_())
        if self.accept("("):
            expr = self.or_()
            self.expect(")")
            return expr
        return self.predicate()

    def predicate(self) -> Expr:
        left = self.operand()
        tok = self.peek
        if tok.kind == "op" and tok.text in ("=", "==", "!=", "<>", "<", "<=", ">", ">="):
            self.next()
            op = {"==": "=", "<>": "!="}.get(tok.text, tok.text)
            return _compare(op, left, self.operand())
        if self.accept("IS"):
            negated = self.accept("NOT")
            self.expect("NULL")
            return IsNull(self._column(left, "IS NULL"), negated)
        negated = self.accept("NOT")
        if self.accept("IN"):
            self.expect("(")
            values = [self.literal()]
            while self.accept(","):
                values.append(self.literal())
            self.expect(")")
            return InList(self._column(left, "IN"), tuple(values), negated)
        if self.accept("BETWEEN"):
            low = self.operand()
            self.expect("AND")
            high = self.operand()
            expr = AndExpr((_compare(">=", left, low), _compare("<=", left, high)))
            return NotExpr(expr) if negated else expr
        if negated:
            raise self.error("IN or BETWEEN after NOT")
        if isinstance(left, Column):  # a bare column: a BOOLEAN column that must be true
            return Compare("=", left, Literal(True))
        raise self.error("a comparison (= != < <= > >=), IN, IS NULL or BETWEEN")

    def _column(self, operand: Column | Literal, what: str) -> Column:
        if not isinstance(operand, Column):
            raise FilterError(f"in filter {self.text!r}: {what} applies to a column, not to {operand.sql()}")
        return operand

    def operand(self) -> Column | Literal:
        tok = self.peek
        if tok.kind == "quoted":
            self.next()
            quote = tok.text[0]
            return Column(tok.text[1:-1].replace(quote * 2, quote))
        if tok.kind == "word" and tok.keyword not in _KEYWORDS and not (
                tok.keyword in ("DATE", "TIMESTAMP") and self.tokens[self.i + 1].kind == "string"):
            self.next()
            return Column(tok.text)
        return self.literal()

    def literal(self) -> Literal:
        tok = self.next()
        if tok.kind == "op" and tok.text in ("-", "+") and self.peek.kind == "number":
            value = _number(self.next().text)
            return Literal(-value if tok.text == "-" else value)
        if tok.kind == "number":
            return Literal(_number(tok.text))
        if tok.kind == "string":
            return Literal(tok.text[1:-1].replace("''", "'"))
        if tok.keyword in ("TRUE", "FALSE"):
            return Literal(tok.keyword == "TRUE")
        if tok.keyword == "NULL":
            return Literal(None)
        if tok.keyword in ("DATE", "TIMESTAMP") and self.peek.kind == "string":
            text = self.next().text[1:-1]
            return Literal(_typed_literal(tok.keyword.lower(), text), tok.keyword.lower())
        self.i -= 1
        raise self.error("a column or a literal (number, 'string', TRUE, FALSE, NULL, DATE '...', TIMESTAMP '...')")


def _number(text: str) -> int | float:
    return float(text) if any(c in text for c in ".eE") else int(text)


def _typed_literal(kind: str, text: str) -> dt.date | dt.datetime:
    try:
        return dt.date.fromisoformat(text.strip()) if kind == "date" else dt.datetime.fromisoformat(text.strip())
    except ValueError:
        form = "yyyy-mm-dd" if kind == "date" else "yyyy-mm-dd hh:mm:ss[.ffffff]"
        raise FilterError(f"{kind.upper()} '{text}' is not a {kind} ({form})") from None


def _compare(op: str, left: Column | Literal, right: Column | Literal) -> Expr:
    if isinstance(left, Column):
        return Compare(op, left, right)
    if isinstance(right, Column):  # 5 < id  ->  id > 5
        return Compare(_FLIP[op], right, left)
    raise FilterError(f"a comparison needs a column: {left.sql()} {op} {right.sql()}")


def parse_filter(text: str) -> Expr:
    """A filter from SQL-like text: `id > 5 AND (kind IN ('a', 'b') OR day >= DATE '2024-01-02')`.

    Comparisons (= != <> < <= > >=), [NOT] IN (...), IS [NOT] NULL, [NOT] BETWEEN .. AND .., AND, OR, NOT and
    parentheses; literals: numbers, 'strings', TRUE, FALSE, NULL, DATE 'yyyy-mm-dd', TIMESTAMP 'yyyy-mm-dd
    hh:mm:ss[.ffffff]'; column names bare or quoted with backquotes (or double quotes), or qualified by a
    table alias (`s.v > t.v`: row-level MERGE conditions name the source's and the target's columns so)."""
    if not isinstance(text, str):
        raise FilterError(f"a filter string is expected, got {type(text).__name__}")
    return _Parser(text).parse()


def parse_operand(text: str) -> Column | Literal:
    """One value in the filter language: a column (`v`, `s.v`, a quoted name) or a literal (`5`, `'text'`,
    `NULL`, `DATE '2024-01-02'`); row-level UPDATE and MERGE take string values so."""
    parser = _Parser(text)
    if parser.peek.kind == "end":
        raise FilterError("the value is empty")
    value = parser.operand()
    if parser.peek.kind != "end":
        raise parser.error("the end of the value (a column or a literal)")
    return value


# ------------------------------------------------------------------ binding to a schema
@dataclass(frozen=True)
class BoundFilter:
    """A filter bound to a schema: the exact row filter, the pruning predicate it implies, the columns it reads."""

    expression: pc.Expression
    predicate: Predicate | None
    columns: tuple[str, ...]
    text: str


def bind_filter(expr: Expr | str | Predicate, schema: pa.Schema) -> BoundFilter:
    """Resolve columns (exact name, else the one name equal ignoring case) and coerce literals to their
    column's type; FilterError naming what does not fit."""
    if isinstance(expr, str):
        expr = parse_filter(expr)
    if isinstance(expr, Predicate):  # a core predicate (Leaf / And / Or) is exact as well
        missing = sorted(n for n in expr.fields() if n not in schema.names)
        if missing:
            raise FilterError(f"the filter names column(s) {missing} not in the table (columns: "
                              f"{', '.join(schema.names)})")
        return BoundFilter(expr.expression(), expr, tuple(n for n in schema.names if n in expr.fields()), repr(expr))
    if not isinstance(expr, Expr):
        raise FilterError(f"a filter is a string, a paimon_ds.col(...) expression or a predicate; got {expr!r}")
    binder = _Binder(schema)
    expression = binder.expression(expr)
    try:  # comparisons of incompatible columns (a string with a date column, ...) fail here, not mid-read
        schema.empty_table().filter(expression)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise FilterError(f"filter {expr.sql()!r} cannot be evaluated on the table's columns: {e}") from None
    return BoundFilter(expression, binder.prune(expr, False), tuple(n for n in schema.names if n in binder.used),
                       expr.sql())


class _Binder:
    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self.used: set[str] = set()

    def name(self, column: Column) -> str:
        if column.name in self.schema.names:
            self.used.add(column.name)
            return column.name
        folded = [n for n in self.schema.names if n.lower() == column.name.lower()]
        if len(folded) == 1:
            self.used.add(folded[0])
            return folded[0]
        raise FilterError(f"the filter names column {column.name!r}, which is not in the table (columns: "
                          f"{', '.join(self.schema.names)})")

    def scalar(self, column: str, literal: Literal) -> pa.Scalar:
        """The literal as a scalar of the column's type; a number that type cannot hold exactly (2.5 for an
        INT column, 10**12 for INT) keeps its own type, so the comparison stays exact."""
        target = self.schema.field(column).type
        value = literal.value
        if value is None:
            return pa.scalar(None, target)
        textual = pa.types.is_string(target) or pa.types.is_large_string(target) or pa.types.is_binary(target)
        if isinstance(value, bool) != pa.types.is_boolean(target) or (
                textual and isinstance(value, (int, float, dt.date))):
            raise FilterError(f"column {column!r} is {target}: it cannot be compared with {literal.sql()}")
        if isinstance(value, (dt.datetime, dt.date)) and pa.types.is_timestamp(target) and target.tz is not None:
            # a TIMESTAMP_LTZ column (UTC in Arrow): a naive literal is taken as UTC
            if not isinstance(value, dt.datetime):
                value = dt.datetime.combine(value, dt.time())
            if value.tzinfo is None:
                value = value.replace(tzinfo=dt.timezone.utc)
        elif isinstance(value, str) and pa.types.is_timestamp(target) and target.tz is not None:
            try:
                value = pa.scalar(value).cast(pa.timestamp(target.unit))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                raise FilterError(f"column {column!r} is {target}: {literal.sql()} is not a timestamp") from None
            value = pc.assume_timezone(value, "UTC")
        source = value if isinstance(value, pa.Scalar) else pa.scalar(value)
        try:
            return source.cast(target, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            numeric = (pa.types.is_integer(source.type) or pa.types.is_floating(source.type)) and (
                pa.types.is_integer(target) or pa.types.is_floating(target) or pa.types.is_decimal(target))
            if numeric:
                return source
            raise FilterError(f"column {column!r} is {target}: {literal.sql()} cannot be compared with it "
                              f"({e})") from None

    def expression(self, expr: Expr) -> pc.Expression:
        if isinstance(expr, Compare):
            name = self.name(expr.left)
            field = pc.field(name)
            if isinstance(expr.right, Column):
                right: Any = pc.field(self.name(expr.right))
            else:
                right = self.scalar(name, expr.right)
                if right.is_valid and pa.types.is_floating(self.schema.field(name).type) \
                        and pa.types.is_floating(right.type):
                    # as Paimon's predicates compare floats (Double.compareTo): NaN = NaN, -0.0 < 0.0, the same
                    # order that prunes partitions, so pruning never drops a row this filter keeps
                    return float_comparison(field, expr.op, right.as_py())
            return {"=": field.__eq__, "!=": field.__ne__, "<": field.__lt__, "<=": field.__le__,
                    ">": field.__gt__, ">=": field.__ge__}[expr.op](right)
        if isinstance(expr, InList):
            name = self.name(expr.column)
            values = [self.scalar(name, v) for v in expr.values]
            present = [v for v in values if v.is_valid]
            field = pc.field(name)
            target = self.schema.field(name).type
            # SQL's IN: unknown (null) for a null value, and where the list holds a null and no value matched
            if pa.types.is_floating(target) and any(pa.types.is_floating(v.type) for v in present):
                found = pc.scalar(False)  # each value as Paimon compares floats (above)
                for v in present:
                    found = found | (float_comparison(field, "=", v.as_py()) if pa.types.is_floating(v.type)
                                     else field == v)
                found = pc.if_else(field.is_null(), pa.scalar(None, pa.bool_()), found)
            elif len({v.type for v in present}) > 1:  # numbers some of which keep their own type: compare each
                found = field == present[0]
                for v in present[1:]:
                    found = found | (field == v)
            else:
                found = pc.if_else(field.is_null(), pa.scalar(None, pa.bool_()),
                                   field.isin(pa.array([v.as_py() for v in present], present[0].type)
                                              if present else pa.array([], target)))
            if len(present) < len(values):
                found = found | pa.scalar(None, pa.bool_())
            return ~found if expr.negated else found
        if isinstance(expr, IsNull):
            field = pc.field(self.name(expr.column))
            return field.is_valid() if expr.negated else field.is_null()
        if isinstance(expr, NotExpr):
            return ~self.expression(expr.child)
        if isinstance(expr, (AndExpr, OrExpr)):
            parts = [self.expression(c) for c in expr.children]
            out = parts[0]
            for p in parts[1:]:
                out = (out & p) if isinstance(expr, AndExpr) else (out | p)
            return out
        raise FilterError(f"not a filter: {expr!r}")

    def prune(self, expr: Expr, negate: bool) -> Predicate | None:
        """A core predicate that holds wherever ``expr`` is true (``negate``: wherever it is false); None
        where none can be said (then nothing is pruned on that part)."""
        if isinstance(expr, Compare):
            if isinstance(expr.right, Column) or expr.right.value is None:
                return None
            name = self.name(expr.left)
            op = _NEGATE[expr.op] if negate else expr.op
            if op == "!=":
                return None
            target = self.schema.field(name).type
            if negate and expr.op != "!=" and pa.types.is_floating(target):
                return None  # NOT (x < 1) holds for NaN, which x >= 1 does not
            value = self.scalar(name, expr.right).as_py()
            return Leaf(op, name, (value,))
        if isinstance(expr, InList):
            if expr.negated != negate:
                return None
            name = self.name(expr.column)
            values = tuple(v for v in (self.scalar(name, x).as_py() for x in expr.values) if v is not None)
            return Leaf("in", name, values) if values else None
        if isinstance(expr, IsNull):
            return Leaf("is_not_null" if expr.negated != negate else "is_null", self.name(expr.column))
        if isinstance(expr, NotExpr):
            return self.prune(expr.child, not negate)
        if isinstance(expr, (AndExpr, OrExpr)):
            parts = [self.prune(c, negate) for c in expr.children]
            if isinstance(expr, AndExpr) != negate:  # a conjunction: any part that holds prunes
                return and_all([p for p in parts if p is not None])
            if any(p is None for p in parts):  # a disjunction: each part must say something
                return None
            return Or(tuple(parts))
        return None

