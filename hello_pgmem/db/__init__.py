"""The database we own: the connection pool (:class:`Database`), plain connections, the schema
and its migrations, the extensions it needs, Apache AGE's Cypher, and the retrieval log."""

from hello_pgmem.db.batches import ROWS_PER_STATEMENT, as_columns, values_statements
from hello_pgmem.db.connections import (
    ServerInfo,
    check_idle_connection,
    connect,
    discard_unless_rolled_back,
    is_connection_failure,
    probe,
    set_scope,
)
from hello_pgmem.db.database import Conn, Database
from hello_pgmem.db.sharing import SharesDatabase

__all__ = [
    "ROWS_PER_STATEMENT",
    "Conn",
    "Database",
    "ServerInfo",
    "SharesDatabase",
    "as_columns",
    "check_idle_connection",
    "connect",
    "discard_unless_rolled_back",
    "is_connection_failure",
    "probe",
    "set_scope",
    "values_statements",
]
