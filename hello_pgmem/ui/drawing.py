"""Where things go on the page's SVG drawings: a graph neighbourhood in rings by distance, a path
as a chain, and stacked bars of memories per month. Positions only; the templates draw them."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from hello_pgmem.graph.normalize import normalize_name
from hello_pgmem.graph.store import Neighbourhood, PathStep

RING = 150.0
ARROW_GAP = 3.0
"""How far short of a node's circle an edge's arrowhead stops."""
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f")
TYPE_COLOURS = {"episodic": "#4e79a7", "semantic": "#59a14f", "perceptual": "#f28e2b", "working": "#b07aa1"}


@dataclass(frozen=True)
class Node:
    name: str
    entity_type: str
    hops: int
    x: float
    y: float
    colour: str
    label_side: str = field(default="below", compare=False)
    """Where the name goes: the side of the circle (below, above, right, left) farthest from its
    edges, so that no edge or arrowhead runs into it."""

    @property
    def radius(self) -> float:
        return 18.0 if self.hops == 0 else 13.0

    @property
    def label_x(self) -> float:
        offset = {"right": self.radius + 5, "left": -self.radius - 5}.get(self.label_side, 0.0)
        return self.x + offset

    @property
    def label_y(self) -> float:
        """The baseline of the name."""
        offset = {"below": self.radius + 15, "above": -self.radius - 7}.get(self.label_side, 4.0)
        return self.y + offset


@dataclass(frozen=True)
class Edge:
    source: Node
    target: Node
    label: str
    weight: float
    bend: tuple[float, float] | None = None  # a curve's control point, where a line would cross a node

    def point(self, t: float, bend: tuple[float, float] | None = None) -> tuple[float, float]:
        """The point at ``t`` (0 at the source, 1 at the target) of the edge's line or curve, or of
        the curve through ``bend`` when one is given."""
        (ax, ay), (bx, by) = (self.source.x, self.source.y), (self.target.x, self.target.y)
        cx, cy = bend or self.bend or ((ax + bx) / 2, (ay + by) / 2)
        return (
            (1 - t) ** 2 * ax + 2 * (1 - t) * t * cx + t**2 * bx,
            (1 - t) ** 2 * ay + 2 * (1 - t) * t * cy + t**2 * by,
        )

    @property
    def middle(self) -> tuple[float, float]:
        """Where the edge's label goes: the middle of its line or of its curve."""
        return self.point(0.5)

    @property
    def stop(self) -> float:
        """Where the drawn edge stops (as ``t``): ARROW_GAP short of the target's circle, so that
        its arrowhead points at the circle, not into it or its name."""
        reach = self.target.radius + ARROW_GAP
        low, high = 0.0, 1.0
        for _ in range(30):  # the distance to the target falls along the last stretch
            t = (low + high) / 2
            if math.dist(self.point(t), (self.target.x, self.target.y)) > reach:
                low = t
            else:
                high = t
        return low

    @property
    def end(self) -> tuple[float, float]:
        """The point the drawn edge (and its arrowhead's tip) ends at."""
        return self.point(self.stop)

    @property
    def drawn_bend(self) -> tuple[float, float] | None:
        """The control point of the curve cut at :attr:`stop` (None for a straight line)."""
        if self.bend is None:
            return None
        t = self.stop
        return (
            (1 - t) * self.source.x + t * self.bend[0],
            (1 - t) * self.source.y + t * self.bend[1],
        )


@dataclass(frozen=True)
class Drawing:
    nodes: list[Node]
    edges: list[Edge]
    width: float
    height: float


def colour_of(entity_type: str) -> str:
    return PALETTE[sum(map(ord, entity_type)) % len(PALETTE)]


def neighbourhood_drawing(found: Neighbourhood) -> Drawing:
    """The entity at the centre, each ring one relation further; a ring's entities ordered by
    the angle of an entity of the ring inside it that they are related to, so that few lines
    cross."""
    keys = {normalize_name(e.name): e for e in found.entities}
    links: dict[str, set[str]] = defaultdict(set)
    for relation in found.relations:
        a, b = normalize_name(relation.source), normalize_name(relation.target)
        links[a].add(b)
        links[b].add(a)
    angle: dict[str, float] = {}
    rings: dict[int, list[str]] = defaultdict(list)
    for key, entity in keys.items():
        rings[entity.hops].append(key)
    nodes: dict[str, Node] = {}
    for hops in sorted(rings):
        members = rings[hops]

        def parent_angle(key: str, hops: int = hops) -> tuple[float, str]:
            inner = [angle[k] for k in links[key] if k in angle and keys[k].hops == hops - 1]
            return (min(inner) if inner else 0.0, key)

        members.sort(key=parent_angle)
        for i, key in enumerate(members):
            theta = 2 * math.pi * i / len(members) - math.pi / 2
            angle[key] = theta
            radius = RING * hops
            entity = keys[key]
            nodes[key] = Node(
                entity.name,
                entity.entity_type,
                hops,
                radius * math.cos(theta),
                radius * math.sin(theta),
                colour_of(entity.entity_type),
            )
    edges = [
        Edge(nodes[normalize_name(r.source)], nodes[normalize_name(r.target)], r.relation_type, r.weight)
        for r in found.relations
        if normalize_name(r.source) in nodes and normalize_name(r.target) in nodes
    ]
    return _framed(list(nodes.values()), edges)


def path_drawing(steps: Sequence[PathStep]) -> Drawing:
    """A path as a chain from left to right, each relation with its name (and its direction)."""
    names = [steps[0].source] if steps else []
    for step in steps:
        names.append(step.target if normalize_name(step.source) == normalize_name(names[-1]) else step.source)
    nodes = [Node(name, "", i, i * 200.0, 0.0, PALETTE[0]) for i, name in enumerate(names)]
    edges = []
    for i, step in enumerate(steps):
        forward = normalize_name(step.source) == normalize_name(names[i])
        a, b = (nodes[i], nodes[i + 1]) if forward else (nodes[i + 1], nodes[i])
        edges.append(Edge(a, b, step.relation_type, 1.0))
    return _framed(nodes, edges)


def _framed(nodes: list[Node], edges: list[Edge], least: tuple[float, float] = (640.0, 320.0)) -> Drawing:
    """Shift the drawing to sit in the middle of a frame of at least ``least`` (width, height),
    with a margin around it."""
    if not nodes:
        return Drawing([], [], 0, 0)
    margin = 90.0
    spread_x = max(n.x for n in nodes) - min(n.x for n in nodes) + 2 * margin
    spread_y = max(n.y for n in nodes) - min(n.y for n in nodes) + 2 * margin
    width, height = max(spread_x, least[0]), max(spread_y, least[1])
    left = min(n.x for n in nodes) - margin - (width - spread_x) / 2
    top = min(n.y for n in nodes) - margin - (height - spread_y) / 2
    moved = {id(n): Node(n.name, n.entity_type, n.hops, n.x - left, n.y - top, n.colour) for n in nodes}
    placed = list(moved.values())
    shifted = [
        _routed(Edge(moved[id(e.source)], moved[id(e.target)], e.label, e.weight), placed) for e in edges
    ]
    labelled = [replace(n, label_side=_label_side(n, shifted)) for n in placed]
    return Drawing(labelled, shifted, width, height)


SIDES = {"below": (0.0, 1.0), "above": (0.0, -1.0), "right": (1.0, 0.0), "left": (-1.0, 0.0)}


def _label_side(node: Node, edges: Sequence[Edge]) -> str:
    """The side of ``node`` whose direction is farthest from every edge that meets it (below on a
    tie): its name goes there."""
    directions = []
    for edge in edges:
        if node in (edge.source, edge.target):
            near = edge.point(0.9) if edge.target == node else edge.point(0.1)
            length = math.dist(near, (node.x, node.y)) or 1.0
            directions.append(((near[0] - node.x) / length, (near[1] - node.y) / length))

    def clearance(side: str) -> float:
        sx, sy = SIDES[side]
        return -max((sx * dx + sy * dy for dx, dy in directions), default=-1.0)

    return max(SIDES, key=clearance)  # max keeps the first of equals: below


CLEARANCE = 24.0
"""How far a drawn edge stays from the centre of a node it does not join (a node's circle is 13
or 18 across the radius)."""


def _clear(edge: Edge, bend: tuple[float, float] | None, nodes: Sequence[Node], steps: int = 24) -> bool:
    """Whether the edge (through ``bend``, or straight) keeps CLEARANCE from every node it does not join."""
    others = [n for n in nodes if n is not edge.source and n is not edge.target]
    points = [edge.point(i / steps, bend) for i in range(1, steps)]
    return all(math.dist(point, (n.x, n.y)) >= CLEARANCE for point in points for n in others)


def _routed(edge: Edge, nodes: Sequence[Node]) -> Edge:
    """The edge as a straight line, or, when that line would run through a node it does not join,
    as the least curve (either side, 40 px more at each try) that keeps clear of every node."""
    if _clear(edge, None, nodes):
        return edge
    (ax, ay), (bx, by) = (edge.source.x, edge.source.y), (edge.target.x, edge.target.y)
    length = math.dist((ax, ay), (bx, by)) or 1.0
    normal = (-(by - ay) / length, (bx - ax) / length)
    for offset in (40.0 * k * side for k in range(1, 9) for side in (1, -1)):
        # a curve's middle lies halfway to its control point: twice the offset puts it there
        bend = ((ax + bx) / 2 + normal[0] * offset * 2, (ay + by) / 2 + normal[1] * offset * 2)
        if _clear(edge, bend, nodes):
            return Edge(edge.source, edge.target, edge.label, edge.weight, bend)
    return edge


@dataclass(frozen=True)
class Bar:
    label: str
    x: float
    segments: list[tuple[str, float, float, int]]  # type, y, height, count


@dataclass(frozen=True)
class BarChart:
    bars: list[Bar]
    width: float
    height: float
    top: int
    bar_width: float


MAX_CHART_WIDTH = 860.0
"""How wide the monthly chart's bars may spread: its bars narrow as the months it spans grow, and
with its margins it fits a 1,000-pixel page (and the page scales it down in a narrower one)."""
MIN_BAR_STEP = 1.0


def monthly_bars(rows: Sequence[Mapping[str, Any]], height: float = 180.0) -> BarChart:
    """Stacked bars of the live memories created each month, by type, each at its month's place on
    a time axis (months without memories are gaps, not adjacent bars); bars narrow as the span
    grows, to at most about ``MAX_CHART_WIDTH``."""
    months: dict[datetime, dict[str, int]] = defaultdict(dict)
    for row in rows:
        months[row["month"]][row["memory_type"]] = int(row["count"])
    top = max((sum(m.values()) for m in months.values()), default=0)
    ordered = sorted(months)
    span = _months_between(ordered[0], ordered[-1]) + 1 if ordered else 0
    step = max(MIN_BAR_STEP, min(36.0, MAX_CHART_WIDTH / span)) if span else 36.0
    bar_width = step * 28.0 / 36.0
    bars = []
    for month in ordered:
        y = height
        segments = []
        for kind, count in sorted(months[month].items()):
            h = height * count / top if top else 0.0
            y -= h
            segments.append((kind, y, h, count))
        bars.append(Bar(month.strftime("%Y-%m"), 40 + _months_between(ordered[0], month) * step, segments))
    width = 40 + span * step + 50  # room on the right for the last month's slanted label
    return BarChart(bars, max(width, 360.0), height, top, bar_width)


def _months_between(first: datetime, later: datetime) -> int:
    return (later.year - first.year) * 12 + later.month - first.month
