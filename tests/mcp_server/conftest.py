"""The MCP tools through the official SDK's client, against real servers in subprocesses:
`uvicorn memoryhub.plumbing.asgi:application` (the app `manage.py run` serves) for streamable HTTP
at /mcp/, and `manage.py mcp --key …` for stdio. Both use this run's test database, so tests commit
(transactional) what the servers must see.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

ROOT = Path(__file__).resolve().parents[2]


def server_env(tmp: Path) -> dict[str, str]:
    """The environment of a server subprocess: this run's test database, fast embeddings, inline
    background work (so that what a tool stores is searchable when the call returns)."""
    from django.conf import settings

    db = settings.DATABASES["default"]
    host, user = db.get("HOST") or "", db.get("USER") or "postgres"
    url = (
        f"postgresql://{user}@/{db['NAME']}?host={host}"
        if host.startswith("/")
        else (
            f"postgresql://{user}:{db.get('PASSWORD') or ''}@{host}:{db.get('PORT') or 5432}/{db['NAME']}"  # noqa: E501
        )
    )
    return {
        "DATABASE_URL": url,
        "SECRET_KEY": "mcp-tests",
        "MEMORYHUB_DATA_DIR": str(tmp),
        "PATH": os.environ["PATH"],
        "LOG_LEVEL": "WARNING",
        "MEMORYHUB_EMBEDDER": "hash",
        "MEMORYHUB_TASKS_EAGER": "1",
        "HOME": str(tmp),
        # The tests revoke keys from this process and expect the server to refuse them at once;
        # the per-process key cache's window is tested in tests/accounts/test_key_cache.py.
        "MEMORYHUB_API_KEY_CACHE_SECONDS": "0",
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for(url: str, process: subprocess.Popen[bytes], seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with code {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {seconds} s")


@pytest.fixture(scope="session")
def server_url(django_db_setup: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a uvicorn serving memoryhub.plumbing.asgi (REST and /mcp/) on the test
    database."""
    port = _free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "memoryhub.plumbing.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=server_env(tmp_path_factory.mktemp("mcp-http")),
    )
    try:
        _wait_for(f"http://127.0.0.1:{port}/api/v1/health/", process)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


@dataclass
class Result:
    """A tool call's outcome: is_error, the text content, and the structured content."""

    is_error: bool
    text: str
    data: dict[str, Any]

    @property
    def code(self) -> str:
        assert self.is_error, self.text
        return self.data["error"]["code"]


def as_result(result: Any) -> Result:
    return Result(bool(result.is_error), result.content[0].text, result.structured_content or {})


Scenario = Callable[[ClientSession], Awaitable[Any]]


async def _over_http(url: str, key: str, scenario: Scenario) -> Any:
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
    async with (
        streamable_http_client(url, http_client=client) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        return await scenario(session)


async def _over_stdio(env: dict[str, str], key: str, scenario: Scenario) -> Any:
    params = StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp", "--key", key], cwd=str(ROOT), env=env
    )
    async with stdio_client(params) as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        return await scenario(session)


class Mcp:
    """Runs MCP client sessions against one transport: `calls(key, [(tool, args), …])` makes the
    calls in one session; `session(key, scenario)` runs an async scenario for anything else."""

    def __init__(self, transport: str, server_url: str | None, env: dict[str, str]) -> None:
        self.transport = transport
        self.server_url = server_url
        self.env = env

    def session(self, key: str, scenario: Scenario) -> Any:
        if self.transport == "http":
            return asyncio.run(_over_http(f"{self.server_url}/mcp/", key, scenario))
        return asyncio.run(_over_stdio(self.env, key, scenario))

    def calls(self, key: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Result]:
        async def scenario(session: ClientSession) -> list[Result]:
            return [as_result(await session.call_tool(name, args)) for name, args in calls]

        return self.session(key, scenario)

    def call(self, key: str, name: str, args: dict[str, Any]) -> Result:
        return self.calls(key, [(name, args)])[0]


@pytest.fixture
def http_mcp(server_url: str, tmp_path: Path) -> Mcp:
    return Mcp("http", server_url, server_env(tmp_path))


@pytest.fixture
def stdio_mcp(django_db_setup: Any, tmp_path: Path) -> Mcp:
    return Mcp("stdio", None, server_env(tmp_path))


@pytest.fixture(params=["http", "stdio"])
def mcp(request: pytest.FixtureRequest, tmp_path: Path) -> Mcp:
    """Each transport in turn (stdio spawns a server per session: keep these tests few)."""
    if request.param == "http":
        return Mcp("http", request.getfixturevalue("server_url"), server_env(tmp_path))
    return Mcp("stdio", None, server_env(tmp_path))
