"""The English rule extractor's relations on a small labelled set (bench/data/en_relations.json):
precision and recall over (subject, relation, object) triples, and each sentence it gets wrong.

    .venv/bin/python -m bench.en_relations
"""

from __future__ import annotations

import json
from pathlib import Path

from hello_pgmem.graph.rules import RuleExtractor

DATA = Path(__file__).resolve().parent / "data" / "en_relations.json"


def main() -> None:
    cases = json.loads(DATA.read_text(encoding="utf-8"))
    extractor = RuleExtractor()
    found_total = expected_total = right = 0
    for case in cases:
        expected = {tuple(r) for r in case["relations"]}
        found = {(r.source, r.type, r.target) for r in extractor.extract(case["text"]).relations}
        found_total += len(found)
        expected_total += len(expected)
        right += len(found & expected)
        if found != expected:
            print(f"{case['text']}\n  missed {sorted(expected - found)}\n  wrong  {sorted(found - expected)}")
    precision = right / found_total if found_total else 1.0
    recall = right / expected_total if expected_total else 1.0
    print(
        f"{len(cases)} sentences: precision {precision:.1%} ({right}/{found_total}), recall {recall:.1%} ({right}/{expected_total})"
    )


if __name__ == "__main__":
    main()
