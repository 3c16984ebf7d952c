"""The README's first steps, run in order as a newcomer runs them, against the live server: the
shell blocks of "First start" and "Quickstart" (curl), then its Python blocks (the client), the
side-by-side with mem0 by its MemoryHub column. Each with the agent key the first start hands out
(read and write), the README's localhost:8000 replaced by the live server's address. A request the
server refuses fails the test (curl --fail-with-body), as an exception in a Python block does."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.base import make_client, make_key, make_tenant
from tests.sdk.conftest import FAST  # noqa: F401 - the client package is importable from here on

README = Path(__file__).resolve().parents[2] / "README.md"
START, END = "## First start", "**MCP**"
SIDE_BY_SIDE = "# mem0"


def blocks() -> list[tuple[str, str]]:
    """The README's sh and python blocks from its first start to the MCP paragraph, in order."""
    text = README.read_text()
    steps = text.split(START, 1)[1].split(END, 1)[0]
    return re.findall(r"```(sh|python)\n(.*?)```", steps, flags=re.S)


def shell(code: str, base: str) -> str:
    """A shell block as run here: the key from the environment (not the README's placeholder), the
    live server's address, and curl failing on an HTTP error."""
    lines = [line for line in code.splitlines() if not line.startswith("KEY=")]
    code = "\n".join(lines).replace("localhost:8000", base).replace("127.0.0.1:8000", base)
    return code.replace("curl -s ", "curl -sS --fail-with-body ")


def memoryhub_column(code: str) -> str:
    """The MemoryHub half of the side-by-side with mem0: each line from the column its heading
    starts at."""
    lines = code.splitlines()
    column = lines[0].index("# MemoryHub")
    return "\n".join(line[column:] for line in lines[1:])


def test_the_readme_has_the_steps_this_test_runs() -> None:
    kinds = [kind for kind, _ in blocks()]
    assert kinds.count("sh") >= 2 and kinds.count("python") >= 2, kinds
    assert any(SIDE_BY_SIDE in code for _, code in blocks())


@pytest.mark.django_db(transaction=True)
def test_the_quickstart_runs_in_order_with_the_agent_key(live_server: Any) -> None:
    tenant = make_tenant("demo")
    key = make_key(tenant, scopes=("read", "write"))  # the first start's agent key
    base = live_server.url.removeprefix("http://")
    # What the side-by-side takes as given: mem0's `messages`, and a memory's id to delete.
    fact = make_client(key).post(
        "/api/v1/facts/", {"content": "Alice drinks green tea.", "user_id": "alice"}, format="json"
    )
    assert fact.status_code == 201, fact.content
    given = {
        "messages": [{"role": "user", "content": "I drink green tea every morning."}],
        "memory_id": f"fact:{fact.json()['id']}",
    }
    env = {**os.environ, "KEY": key}
    # one reader, one session
    scope: dict[str, Any] = {"KEY": key, "__name__": "readme_quickstart", **given}
    for number, (kind, code) in enumerate(blocks(), 1):
        if kind == "sh":
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", shell(code, base)],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, (number, code, done.stdout, done.stderr)
            continue
        if SIDE_BY_SIDE in code:
            code = memoryhub_column(code)
        code = code.replace("http://127.0.0.1:8000", live_server.url)
        exec(compile(code, f"README.md (block {number})", "exec"), scope)  # noqa: S102 - the README's own code
