"""A real PostgreSQL server for the tests: ``initdb`` + ``pg_ctl`` in a temporary directory.

Debian's ``postgresql`` package provides the binaries (``.ci/run`` installs it when missing);
they live in ``/usr/lib/postgresql/<version>/bin``, which is not on ``PATH``. PostgreSQL refuses
to run as root, so under root the server runs as the ``postgres`` user the package creates.
When no server can be had, ``start_postgres`` says why and the tests that need it are skipped
with that reason.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from langgraph_topics.bench.dev_server import free_port

SERVER_ENV = "LANGGRAPH_TOPICS_TEST_POSTGRES_URI"
"""Use this server (a ``postgresql://`` URI whose user may create databases) instead."""


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server can be started here (the message says why)."""


def _binary(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if candidates:
        return candidates[-1]
    raise PostgresUnavailable(
        f"{name} not found: install Debian's postgresql package (apt-get install postgresql)"
    )


@dataclass
class PostgresServer:
    """A running server; ``uri`` reaches its ``postgres`` database as a superuser."""

    uri: str
    directory: Path | None
    run_as: list[str]

    def database_uri(self, name: str) -> str:
        """The URI of database ``name`` on this server."""
        base, _, _ = self.uri.rpartition("/")
        return f"{base}/{name}"

    def create_database(self, name: str) -> str:
        """Create an empty database and return its URI."""
        import psycopg

        with psycopg.connect(self.uri, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.database_uri(name)

    def stop(self) -> None:
        """Stop the server this object started (a server given by URI is left running)."""
        if self.directory is None:
            return
        data = self.directory / "data"
        subprocess.run(
            [*self.run_as, _binary("pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
            check=False,
        )
        shutil.rmtree(self.directory, ignore_errors=True)


def start_postgres() -> PostgresServer:
    """Start a throw-away server on a free port of 127.0.0.1 (or use ``SERVER_ENV``).

    Raises:
        PostgresUnavailable: The binaries are missing or the server did not start.
    """
    given = os.environ.get(SERVER_ENV)
    if given:
        return PostgresServer(uri=given, directory=None, run_as=[])
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    run_as: list[str] = []
    directory = Path(tempfile.mkdtemp(prefix="lgt-postgres-"))
    if os.geteuid() == 0:
        runuser = shutil.which("runuser")
        if runuser is None:
            raise PostgresUnavailable("running as root and runuser is missing")
        run_as = [runuser, "-u", "postgres", "--"]
        shutil.chown(directory, user="postgres")
    data = directory / "data"
    port = free_port()
    steps = [
        [initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"],
        [
            pg_ctl,
            "-D",
            str(data),
            "-l",
            str(directory / "server.log"),
            "-o",
            f"-p {port} -k {directory} -c listen_addresses=127.0.0.1 -c fsync=off",
            "-w",
            "start",
        ],
    ]
    for step in steps:
        done = subprocess.run([*run_as, *step], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            log = directory / "server.log"
            detail = log.read_text(errors="replace")[-400:] if log.exists() else ""
            shutil.rmtree(directory, ignore_errors=True)
            raise PostgresUnavailable(
                f"{Path(step[0]).name} failed: {(done.stderr or done.stdout).strip()[-400:]}"
                f" {detail}".strip()
            )
    server = PostgresServer(
        uri=f"postgresql://postgres@127.0.0.1:{port}/postgres", directory=directory, run_as=run_as
    )
    _wait_ready(server)
    return server


def _wait_ready(server: PostgresServer, seconds: float = 20.0) -> None:
    import psycopg

    deadline = time.monotonic() + seconds
    while True:
        try:
            with psycopg.connect(server.uri, connect_timeout=2):
                return
        except psycopg.OperationalError as error:
            if time.monotonic() > deadline:
                server.stop()
                raise PostgresUnavailable(f"server did not accept connections: {error}") from None
            time.sleep(0.2)
