"""A PromQL syntax check for the queries the stack writes (alerts, dashboard, adapter rules), after the grammar of
prometheus/prometheus promql/parser/generated_parser.y and the function and aggregation lists of
promql/parser/functions.go and lex.go (https://prometheus.io/docs/prometheus/latest/querying/). It covers what the
stack writes: vector selectors with label matchers, range selectors, function calls, aggregations with
by/without, binary operators with bool and on/ignoring/group_left/group_right, numbers, strings and parentheses.

`parse(query)` returns the selectors (metric name, matchers) the query reads, or raises SyntaxError naming the
position. No PyPI package parses PromQL in this environment's package lists; this is the test's own parser.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

FUNCTIONS = {
    # promql/parser/functions.go (the ones any stack query might use, with their argument counts)
    "abs": (1, 1),
    "absent": (1, 1),
    "absent_over_time": (1, 1),
    "avg_over_time": (1, 1),
    "ceil": (1, 1),
    "clamp_max": (2, 2),
    "clamp_min": (2, 2),
    "count_over_time": (1, 1),
    "delta": (1, 1),
    "floor": (1, 1),
    "histogram_quantile": (2, 2),
    "increase": (1, 1),
    "irate": (1, 1),
    "label_replace": (5, 5),
    "max_over_time": (1, 1),
    "min_over_time": (1, 1),
    "rate": (1, 1),
    "round": (1, 2),
    "scalar": (1, 1),
    "sum_over_time": (1, 1),
    "time": (0, 0),
    "vector": (1, 1),
}
RANGE_FUNCTIONS = {f for f in FUNCTIONS if f.endswith("_over_time") or f in {"rate", "irate", "increase", "delta"}}
AGGREGATIONS = {"sum", "avg", "min", "max", "count", "stddev", "stdvar", "group", "topk", "bottomk", "quantile"}
BINARY = ["==", "!=", ">=", "<=", ">", "<", "+", "-", "*", "/", "%", "^", "and", "or", "unless"]
COMPARISONS = {"==", "!=", ">=", "<=", ">", "<"}
TOKEN = re.compile(
    r"""\s*(?:
    (?P<number>(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)
    |(?P<duration>\[\d+[smhdwy]\])
    |(?P<string>"(?:[^"\\]|\\.)*")
    |(?P<op>==|!=|>=|<=|=~|!~|[-+*/%^<>=(){},])
    |(?P<ident>[a-zA-Z_:][a-zA-Z0-9_:]*)
    )""",
    re.VERBOSE,
)
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


@dataclass(frozen=True)
class Selector:
    metric: str
    matchers: tuple[tuple[str, str, str], ...]  # (label, operator, value)


def tokenize(query: str) -> list[tuple[str, str, int]]:
    out, pos = [], 0
    while pos < len(query):
        if query[pos:].strip() == "":
            break
        m = TOKEN.match(query, pos)
        if m is None or m.end() == pos:
            raise SyntaxError(f"unexpected character at {pos}: {query[pos : pos + 20]!r}")
        kind = m.lastgroup
        assert kind is not None
        out.append((kind, m.group(kind), m.start(kind)))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, query: str):
        self.query = query
        self.tokens = tokenize(query)
        self.i = 0
        self.selectors: list[Selector] = []
        self.grouped: list[set[str]] = []  # per selector: the labels of the by/without/on clauses over it

    def group(self, start: int, labels: list[str]) -> None:
        for seen in self.grouped[start:]:
            seen.update(labels)

    def peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, value: str | None = None, kind: str | None = None) -> tuple[str, str, int]:
        tok = self.peek()
        if tok is None or (value is not None and tok[1] != value) or (kind is not None and tok[0] != kind):
            where = tok[2] if tok else len(self.query)
            raise SyntaxError(f"expected {value or kind} at {where} in {self.query!r}")
        self.i += 1
        return tok

    def at(self, value: str) -> bool:
        tok = self.peek()
        return tok is not None and tok[1] == value and tok[0] in ("op", "ident")

    def expression(self, level: int = 0) -> str:
        """Returns the kind of the expression: scalar, vector or matrix (binary operators by precedence)."""
        levels = [["or"], ["and", "unless"], sorted(COMPARISONS), ["+", "-"], ["*", "/", "%"], ["^"]]
        if level == len(levels):
            return self.unary()
        start = len(self.selectors)
        left = self.expression(level + 1)
        while (tok := self.peek()) is not None and tok[1] in levels[level] and tok[0] in ("op", "ident"):
            self.i += 1
            if self.at("bool"):
                if tok[1] not in COMPARISONS:
                    raise SyntaxError(f"bool after {tok[1]} in {self.query!r}")
                self.take("bool")
            on = self.matching()
            right = self.expression(level + 1)
            self.group(start, on)
            if "matrix" in (left, right):
                raise SyntaxError(f"binary {tok[1]} on a range vector in {self.query!r}")
            if tok[1] in ("and", "or", "unless") and "scalar" in (left, right):
                raise SyntaxError(f"set operator {tok[1]} needs vectors in {self.query!r}")
            left = "scalar" if left == right == "scalar" else "vector"
        return left

    def matching(self) -> list[str]:
        """The labels the operator matches on (on, ignoring) or copies (group_left/right)."""
        named: list[str] = []
        for keyword in ("on", "ignoring"):
            if self.at(keyword):
                self.take(keyword)
                named += self.labels()
        for keyword in ("group_left", "group_right"):
            if self.at(keyword):
                self.take(keyword)
                if self.at("("):
                    named += self.labels()
        return named

    def labels(self) -> list[str]:
        self.take("(")
        names = []
        while not self.at(")"):
            name = self.take(kind="ident")[1]
            if not LABEL_NAME.fullmatch(name):
                raise SyntaxError(f"{name!r} is not a label name in {self.query!r}")
            names.append(name)
            if not self.at(")"):
                self.take(",")
        self.take(")")
        return names

    def unary(self) -> str:
        if self.at("-") or self.at("+"):
            self.i += 1
        return self.primary()

    def primary(self) -> str:
        tok = self.peek()
        if tok is None:
            raise SyntaxError(f"unexpected end of {self.query!r}")
        kind, value, _ = tok
        if kind in ("number", "string"):
            self.i += 1
            return self.literal(kind, value)
        if value == "(":
            self.take("(")
            inner = self.expression()
            self.take(")")
            return self.range_suffix(inner)
        if kind == "ident" and value in AGGREGATIONS:
            return self.aggregation()
        if (
            kind == "ident"
            and value in FUNCTIONS
            and self.tokens[self.i + 1 : self.i + 2]
            and self.tokens[self.i + 1][1] == "("
        ):
            return self.call()
        if kind == "ident" or value == "{":
            return self.range_suffix(self.selector())
        raise SyntaxError(f"unexpected {value!r} at {tok[2]} in {self.query!r}")

    def literal(self, kind: str, value: str) -> str:
        """A number or string literal: its kind (the evaluator: its value)."""
        return "scalar" if kind == "number" else "string"

    def range_suffix(self, kind: str) -> str:
        tok = self.peek()
        if tok is not None and tok[0] == "duration":
            if kind != "vector":
                raise SyntaxError(f"range on a {kind} in {self.query!r}")
            self.i += 1
            return "matrix"
        return kind

    def selector(self) -> str:
        metric = ""
        if self.peek() is not None and self.peek()[0] == "ident":  # type: ignore[index]
            metric = self.take(kind="ident")[1]
        matchers = []
        if self.at("{"):
            self.take("{")
            while not self.at("}"):
                label = self.take(kind="ident")[1]
                op = self.take(kind="op")[1]
                if op not in ("=", "!=", "=~", "!~"):
                    raise SyntaxError(f"bad matcher operator {op!r} in {self.query!r}")
                value = self.take(kind="string")[1][1:-1]
                if op in ("=~", "!~"):
                    re.compile(value)
                matchers.append((label, op, value))
                if not self.at("}"):
                    self.take(",")
            self.take("}")
        if not metric and not matchers:
            raise SyntaxError(f"empty selector in {self.query!r}")
        self.selectors.append(Selector(metric, tuple(matchers)))
        self.grouped.append(set())
        return "vector"

    def call(self) -> str:
        name = self.take(kind="ident")[1]
        return self.apply(name, self.arguments())

    def arguments(self) -> list[Any]:
        self.take("(")
        args = []
        while not self.at(")"):
            args.append(self.expression())
            if not self.at(")"):
                self.take(",")
        self.take(")")
        return args

    def apply(self, name: str, args: list[Any]) -> str:
        """A function call's kind from its arguments' (the evaluator: its value from theirs)."""
        low, high = FUNCTIONS[name]
        if not low <= len(args) <= high:
            raise SyntaxError(f"{name} takes {low}-{high} arguments, got {len(args)} in {self.query!r}")
        if name in RANGE_FUNCTIONS and args[0] != "matrix":
            raise SyntaxError(f"{name} needs a range vector in {self.query!r}")
        if name == "histogram_quantile" and args != ["scalar", "vector"]:
            raise SyntaxError(f"histogram_quantile(scalar, vector) in {self.query!r}")
        if name == "vector" and args != ["scalar"]:
            raise SyntaxError(f"vector(scalar) in {self.query!r}")
        return "scalar" if name in ("scalar", "time") else "vector"

    def aggregation(self) -> str:
        self.take(kind="ident")
        start = len(self.selectors)
        named: list[str] = []
        if self.at("by") or self.at("without"):
            self.i += 1
            named += self.labels()
        self.take("(")
        args = [self.expression()]
        while self.at(","):
            self.take(",")
            args.append(self.expression())
        self.take(")")
        if self.at("by") or self.at("without"):
            self.i += 1
            named += self.labels()
        self.group(start, named)
        if args[-1] != "vector":
            raise SyntaxError(f"aggregation over a {args[-1]} in {self.query!r}")
        return "vector"


def parse(query: str) -> list[Selector]:
    """The selectors `query` reads; SyntaxError if it is not PromQL (within the grammar above)."""
    return [s for s, _ in parse_grouped(query)]


def parse_grouped(query: str) -> list[tuple[Selector, set[str]]]:
    """Each selector `query` reads, with the labels the by/without/on clauses over it name (an aggregation's over its
    argument, a binary operator's matching over both its sides)."""
    parser = _Parser(query)
    kind = parser.expression()
    if parser.peek() is not None:
        raise SyntaxError(f"trailing {parser.peek()[1]!r} in {query!r}")  # type: ignore[index]
    if kind not in ("vector", "scalar"):
        raise SyntaxError(f"a query must be an instant vector or scalar, not a {kind}: {query!r}")
    return list(zip(parser.selectors, parser.grouped, strict=True))


def groupings(query: str) -> set[str]:
    """Every label a `by (...)`, `without (...)` or `on (...)` clause names."""
    return {
        label.strip()
        for clause in re.findall(r"\b(?:by|without|on|ignoring)\s*\(([^)]*)\)", query)
        for label in clause.split(",")
        if label.strip()
    }


def check_scraped(query: str, series_labels: dict[str, frozenset[str]]) -> None:
    """The query parses, every series it reads is one the stack's scraping produces, and every label it filters or
    groups by is on the series it groups (`series_labels`: stacks.monitoring.metrics.SERIES_LABELS)."""
    selectors = parse_grouped(query)
    assert selectors, query
    for s, grouped in selectors:
        assert s.metric in series_labels, (s.metric, query)
        used = {label for label, _, _ in s.matchers} | grouped
        assert used <= series_labels[s.metric], (s.metric, used - series_labels[s.metric], query)


# ---- evaluation ---------------------------------------------------------------------------------------------------
# An instant evaluation of the same grammar over a set of series, after Prometheus' semantics
# (https://prometheus.io/docs/prometheus/latest/querying/operators/): aggregations drop every label but their `by`
# ones (all but their `without` ones); a comparison between a vector and a scalar or a vector filters the left
# side unless `bool`; `and`, `or`, `unless` match on every label but the metric name, or on the `on (...)` ones;
# vector(s) has no labels. A range selector evaluates to the series' values as given, so rate(x[5m]) of a series
# is the value the world gives it (a per-second rate). Enough to ask "does this alert's condition hold?" of a
# world the test describes.

Sample = tuple[tuple[tuple[str, str], ...], float]  # (sorted labels, value), the metric name as __name__


def _signature(labels: tuple[tuple[str, str], ...], on: list[str] | None) -> tuple[tuple[str, str], ...]:
    return tuple((k, v) for k, v in labels if k != "__name__" and (on is None or k in on))


_ARITHMETIC = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b if b else (float("nan") if a == 0 else float("inf") * (1 if a > 0 else -1)),
    "%": lambda a, b: a % b if b else float("nan"),
    "^": lambda a, b: a**b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
}


class _Evaluator(_Parser):
    def __init__(self, query: str, series: list[tuple[str, dict[str, str], float]]):
        super().__init__(query)
        self.series = [
            (tuple(sorted({**labels, "__name__": name}.items())), float(value)) for name, labels, value in series
        ]

    def expression(self, level: int = 0) -> Any:
        levels = [["or"], ["and", "unless"], sorted(COMPARISONS), ["+", "-"], ["*", "/", "%"], ["^"]]
        if level == len(levels):
            return self.unary()
        left = self.expression(level + 1)
        while (tok := self.peek()) is not None and tok[1] in levels[level] and tok[0] in ("op", "ident"):
            self.i += 1
            is_bool = self.at("bool")
            if is_bool:
                self.take("bool")
            on = self.matching()
            right = self.expression(level + 1)
            left = self.binary(tok[1], left, right, on, is_bool)
        return left

    def matching(self) -> Any:
        on = None
        if self.at("on"):
            self.take("on")
            on = self.labels()
        elif self.at("ignoring") or self.at("group_left") or self.at("group_right"):
            raise NotImplementedError(f"ignoring/group_* in {self.query!r}")
        return on

    def binary(self, op: str, left, right, on: list[str] | None, is_bool: bool) -> Any:
        scalar = (int, float)
        if op in ("and", "or", "unless"):
            sigs = {_signature(labels, on) for labels, _ in right}
            if op == "and":
                return [s for s in left if _signature(s[0], on) in sigs]
            if op == "unless":
                return [s for s in left if _signature(s[0], on) not in sigs]
            mine = {_signature(labels, on) for labels, _ in left}
            return left + [s for s in right if _signature(s[0], on) not in mine]
        fn = _ARITHMETIC[op]
        comparison = op in COMPARISONS
        if isinstance(left, scalar) and isinstance(right, scalar):
            return float(fn(left, right))

        def one(labels, a: float, b: float) -> Sample | None:
            value = fn(a, b)
            if comparison and not is_bool:
                return (labels, a) if value else None
            keep = tuple((k, v) for k, v in labels if k != "__name__")
            return (keep, float(value))

        if isinstance(right, scalar):
            out = [one(labels, value, right) for labels, value in left]
        elif isinstance(left, scalar):
            out = [one(labels, left, value) for labels, value in right]
            if comparison and not is_bool:  # a filter keeps the vector's sample
                out = [(labels, value) for labels, value in right if fn(left, value)]
        else:
            others = {_signature(labels, on): value for labels, value in right}
            out = [
                one(labels, value, others[_signature(labels, on)])
                for labels, value in left
                if _signature(labels, on) in others
            ]
        return [s for s in out if s is not None]

    def unary(self) -> Any:
        if self.at("-"):
            self.i += 1
            value: Any = self.primary()
            return -value if isinstance(value, float) else [(labels, -v) for labels, v in value]
        if self.at("+"):
            self.i += 1
        return self.primary()

    def literal(self, kind: str, value: str) -> Any:
        return float(value) if kind == "number" else value[1:-1]

    def range_suffix(self, value) -> Any:
        tok = self.peek()
        if tok is not None and tok[0] == "duration":
            self.i += 1
        return value

    def selector(self) -> Any:
        super().selector()
        wanted = self.selectors[-1]
        out = []
        for labels, value in self.series:
            have = dict(labels)
            if wanted.metric and have.get("__name__") != wanted.metric:
                continue
            if all(_matches(have.get(label, ""), op, expected) for label, op, expected in wanted.matchers):
                out.append((labels, value))
        return out

    def apply(self, name: str, args: list[Any]) -> Any:
        if name == "vector":
            return [((), float(args[0]))]
        if name in ("rate", "irate", "increase", "delta"):
            return [(tuple((k, v) for k, v in labels if k != "__name__"), value) for labels, value in args[0]]
        if name == "absent":
            return [] if args[0] else [((), 1.0)]
        raise NotImplementedError(f"{name} in {self.query!r}")

    def aggregation(self) -> Any:
        op = self.take(kind="ident")[1]
        by: list[str] | None = None
        without: list[str] | None = None

        def grouping() -> None:
            nonlocal by, without
            if self.at("by"):
                self.i += 1
                by = self.labels()
            elif self.at("without"):
                self.i += 1
                without = self.labels()

        grouping()
        self.take("(")
        vector = self.expression()
        self.take(")")
        grouping()
        groups: dict[tuple[tuple[str, str], ...], list[float]] = {}
        for labels, value in vector:
            if by is not None:
                key = tuple((k, v) for k, v in labels if k in by)
            elif without is not None:
                key = tuple((k, v) for k, v in labels if k not in without and k != "__name__")
            else:
                key = ()
            groups.setdefault(key, []).append(value)
        fold: dict[str, Any] = {"sum": sum, "min": min, "max": max, "count": len, "avg": lambda v: sum(v) / len(v)}
        if op not in fold:
            raise NotImplementedError(f"{op} in {self.query!r}")
        return [(key, float(fold[op](values))) for key, values in groups.items()]


def _matches(value: str, op: str, expected: str) -> bool:
    if op == "=":
        return value == expected
    if op == "!=":
        return value != expected
    found = re.fullmatch(expected, value) is not None
    return found if op == "=~" else not found


def evaluate(query: str, series: list[tuple[str, dict[str, str], float]]) -> list[Sample] | float:
    """`query`'s instant value over `series` ((metric name, labels, value) each): a list of samples, or a float."""
    evaluator = _Evaluator(query, series)
    value = evaluator.expression()
    if evaluator.peek() is not None:
        raise SyntaxError(f"trailing {evaluator.peek()[1]!r} in {query!r}")  # type: ignore[index]
    return value
