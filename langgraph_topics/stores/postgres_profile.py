"""The ``postgres`` store profile: one connection pool, LangGraph's saver and store on it.

Every worker of a deployment opens the same database: checkpoints live in the saver's tables
(``checkpoints``, ``checkpoint_blobs``, ``checkpoint_writes``), topics in the store's
(``store``). Both take their connections from one pool, which ``TopicMemory`` owns and closes.
psycopg is imported here only, so the embedded profile never needs it installed.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from langgraph_topics.errors import InputError
from langgraph_topics.settings import POSTGRES_URI_ENV

if TYPE_CHECKING:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.store.postgres import PostgresStore
    from psycopg_pool import ConnectionPool

CONNECT_TIMEOUT_SECONDS = 10.0
"""How long opening the pool waits for a first connection before the server is unreachable."""
POOL_MAX_SIZE = 10
"""Connections per worker: a turn reads its active topics in parallel, each read briefly."""
SETUP_LOCK_NAME = "langgraph-topics:setup"
"""Advisory lock serialising table creation: two workers starting at once on a fresh database
would both insert the same migration version."""
SETUP_POLL_SECONDS = 0.05
"""How often a worker waiting for another's table creation asks for the setup lock again."""


class StoreUnavailableError(InputError):
    """The profile's database cannot be reached or used (the message names it, no password)."""


def redacted(uri: str) -> str:
    """``uri`` without its password (for messages and logs)."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return "<unparsable URI>"
    if parts.password is None:
        return uri
    user = parts.username or ""
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    netloc = f"{user}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def advisory_key(name: str) -> int:
    """A stable signed 64-bit advisory-lock key for ``name`` (``pg_advisory_lock(bigint)``)."""
    digest = hashlib.sha256(name.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def connection_kwargs() -> dict[str, Any]:
    """Connection options LangGraph's saver and store require (see their README)."""
    from psycopg.rows import dict_row

    return {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}


def unreachable(uri: str, error: BaseException) -> StoreUnavailableError:
    """The one-line error for a database that did not answer."""
    detail = " ".join(str(error).split()) or type(error).__name__
    return StoreUnavailableError(
        f"{POSTGRES_URI_ENV}: cannot reach PostgreSQL at {redacted(uri)}: {detail[:200]}"
    )


@dataclass
class PostgresProfile:
    """The opened database of a memory: its pool, checkpoint saver and store."""

    uri: str
    pool: ConnectionPool[Any]
    saver: PostgresSaver
    store: PostgresStore

    def close(self) -> None:
        """Close every connection of the pool (the saver and the store stop working)."""
        self.pool.close()


def open_postgres_profile(
    uri: str, *, connect_timeout: float = CONNECT_TIMEOUT_SECONDS
) -> PostgresProfile:
    """Open a pool on ``uri`` and create the saver's and the store's tables if missing.

    Raises:
        StoreUnavailableError: The server did not answer within ``connect_timeout``, the
            tables could not be created (one line naming the URI without its password), or
            the ``postgres`` extra is not installed.
    """
    try:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from langgraph.store.postgres import PostgresStore
        from psycopg_pool import ConnectionPool, PoolTimeout
    except ImportError as error:
        raise StoreUnavailableError(
            f"store='postgres' needs {error.name or 'psycopg'}: "
            'pip install "langgraph-topics[postgres]"'
        ) from None

    # One plain connection first: it fails at once with the server's reason, where a pool
    # retries in the background and only reports a timeout.
    try:
        psycopg.connect(uri, connect_timeout=max(1, int(connect_timeout))).close()
    except psycopg.Error as error:
        raise unreachable(uri, error) from None
    pool: ConnectionPool[Any] = ConnectionPool(
        uri,
        min_size=1,
        max_size=POOL_MAX_SIZE,
        kwargs={**connection_kwargs(), "connect_timeout": max(1, int(connect_timeout))},
        check=ConnectionPool.check_connection,  # a server restart leaves dead connections
        open=False,
        name="langgraph-topics",
    )
    try:
        pool.open(wait=True, timeout=connect_timeout)
    except PoolTimeout as error:
        pool.close()
        raise unreachable(uri, error) from None
    try:
        saver = PostgresSaver(pool)  # type: ignore[arg-type]
        store = PostgresStore(pool)  # type: ignore[arg-type]
        with pool.connection() as connection:
            key = advisory_key(SETUP_LOCK_NAME)
            _take_setup_lock(connection, key)
            try:
                saver.setup()
                store.setup()
            finally:
                connection.execute("SELECT pg_advisory_unlock(%s)", (key,))
    except psycopg.Error as error:
        pool.close()
        raise StoreUnavailableError(
            f"{POSTGRES_URI_ENV}: cannot set up the tables in {redacted(uri)}: "
            f"{' '.join(str(error).split())[:200]}"
        ) from None
    except BaseException:
        pool.close()
        raise
    return PostgresProfile(uri=uri, pool=pool, saver=saver, store=store)


def _take_setup_lock(connection: psycopg.Connection[Any], key: int) -> None:
    """Wait for the setup lock by polling, never inside one long statement.

    The saver's migrations build indexes ``CONCURRENTLY``, which waits for every open
    transaction of the database, a blocked ``pg_advisory_lock`` call included: two workers
    would wait for each other for ever.
    """
    while True:
        row = connection.execute("SELECT pg_try_advisory_lock(%s) AS taken", (key,)).fetchone()
        if row and row["taken"]:
            return
        time.sleep(SETUP_POLL_SECONDS)


@contextmanager
def saver_connection(saver: PostgresSaver) -> Iterator[psycopg.Connection[Any]]:
    """One of the saver's connections for the block (borrowed from its pool, if it has one)."""
    from psycopg_pool import ConnectionPool

    conn = saver.conn
    if isinstance(conn, ConnectionPool):
        with conn.connection() as connection:
            yield connection
    else:
        yield conn
