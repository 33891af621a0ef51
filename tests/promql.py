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
        left = self.expression(level + 1)
        while (tok := self.peek()) is not None and tok[1] in levels[level] and tok[0] in ("op", "ident"):
            self.i += 1
            if self.at("bool"):
                if tok[1] not in COMPARISONS:
                    raise SyntaxError(f"bool after {tok[1]} in {self.query!r}")
                self.take("bool")
            self.matching()
            right = self.expression(level + 1)
            if "matrix" in (left, right):
                raise SyntaxError(f"binary {tok[1]} on a range vector in {self.query!r}")
            if tok[1] in ("and", "or", "unless") and "scalar" in (left, right):
                raise SyntaxError(f"set operator {tok[1]} needs vectors in {self.query!r}")
            left = "scalar" if left == right == "scalar" else "vector"
        return left

    def matching(self) -> None:
        for keyword in ("on", "ignoring"):
            if self.at(keyword):
                self.take(keyword)
                self.labels()
        for keyword in ("group_left", "group_right"):
            if self.at(keyword):
                self.take(keyword)
                if self.at("("):
                    self.labels()

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
        if kind == "number":
            self.i += 1
            return "scalar"
        if kind == "string":
            self.i += 1
            return "string"
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
        return "vector"

    def call(self) -> str:
        name = self.take(kind="ident")[1]
        self.take("(")
        args = []
        while not self.at(")"):
            args.append(self.expression())
            if not self.at(")"):
                self.take(",")
        self.take(")")
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
        if self.at("by") or self.at("without"):
            self.i += 1
            self.labels()
        self.take("(")
        args = [self.expression()]
        while self.at(","):
            self.take(",")
            args.append(self.expression())
        self.take(")")
        if self.at("by") or self.at("without"):
            self.i += 1
            self.labels()
        if args[-1] != "vector":
            raise SyntaxError(f"aggregation over a {args[-1]} in {self.query!r}")
        return "vector"


def parse(query: str) -> list[Selector]:
    """The selectors `query` reads; SyntaxError if it is not PromQL (within the grammar above)."""
    parser = _Parser(query)
    kind = parser.expression()
    if parser.peek() is not None:
        raise SyntaxError(f"trailing {parser.peek()[1]!r} in {query!r}")  # type: ignore[index]
    if kind not in ("vector", "scalar"):
        raise SyntaxError(f"a query must be an instant vector or scalar, not a {kind}: {query!r}")
    return parser.selectors


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
    groups by is on every series it reads (`series_labels`: stacks.monitoring.metrics.SERIES_LABELS)."""
    selectors = parse(query)
    assert selectors, query
    for s in selectors:
        assert s.metric in series_labels, (s.metric, query)
        used = {label for label, _, _ in s.matchers} | groupings(query)
        assert used <= series_labels[s.metric], (s.metric, used - series_labels[s.metric], query)
