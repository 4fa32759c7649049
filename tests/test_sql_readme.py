"""hello_pgmem/sql/README.md names the script that defines each live SQL function; kept true here."""

from __future__ import annotations

import re
from pathlib import Path

from hello_pgmem import Database

SQL = Path(__file__).resolve().parent.parent / "hello_pgmem" / "sql"
CREATE = re.compile(r"CREATE (?:OR REPLACE )?FUNCTION (\w+)\s*\(", re.I)
DROP = re.compile(r"DROP FUNCTION (?:IF EXISTS )?(\w+)\s*\(", re.I)
ROW = re.compile(r"^\| `(\w+)` \| `([\w-]+--\d{4}\.sql)` \|", re.M)


def defining_scripts() -> dict[str, str]:
    """Each function's last defining upgrade script, replaying the scripts in revision order."""
    scripts = sorted(
        (p for p in SQL.glob("*.sql") if not p.name.startswith("downgrade--")),
        key=lambda p: (p.stem.split("--")[1], p.name),
    )
    defined: dict[str, str] = {}
    for script in scripts:
        text = script.read_text(encoding="utf-8")
        events = [(m.start(), "drop", m.group(1)) for m in DROP.finditer(text)]
        events += [(m.start(), "create", m.group(1)) for m in CREATE.finditer(text)]
        for _, kind, name in sorted(events):
            if kind == "drop":
                defined.pop(name, None)
            else:
                defined[name] = script.name
    return defined


def test_readme_names_the_script_of_every_live_function(database: Database) -> None:
    readme = dict(ROW.findall((SQL / "README.md").read_text(encoding="utf-8")))
    expected = defining_scripts()
    table = "\n".join(f"| `{name}` | `{script}` |" for name, script in sorted(expected.items()))
    assert readme == expected, f"update the table in hello_pgmem/sql/README.md:\n{table}"
    with database.connection() as conn:
        live = {
            row[0]
            for row in conn.execute(
                "SELECT p.proname FROM pg_proc p WHERE p.pronamespace = %s::regnamespace",
                (database.settings.schema_name,),
            ).fetchall()
        }
    assert set(expected) == live, "the scripts and the migrated schema disagree"
