"""The "Use it from your framework" snippets of docs/frameworks.md, run as written against the live
server.

Each Python block under one of the framework headings below is executed with `KEY` set to a key
of the test tenant and the README's http://127.0.0.1:8000 replaced by the live server's address.
The OpenAI Agents snippet's model is the one thing replaced: the SDK's default model provider
answers with a fake model (no network)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.sdk.conftest import FAST  # noqa: F401 - the client package is importable from here on

README = Path(__file__).resolve().parents[2] / "docs" / "frameworks.md"
SECTION = "## Use it from your framework"
HEADINGS = {
    "LangChain": ["langchain_core"],
    "LangGraph and LangMem": ["langgraph", "langmem"],
    "OpenAI Agents SDK": ["agents"],
}


def snippets() -> dict[str, list[str]]:
    text = README.read_text()
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    found: dict[str, list[str]] = {}
    for part in re.split(r"\n### ", section)[1:]:
        heading, _, body = part.partition("\n")
        found[heading.strip()] = re.findall(r"```python\n(.*?)```", body, flags=re.S)
    return found


def test_frameworks_are_imported_only_when_used() -> None:
    code = (
        "import sys, memoryhub_client; from memoryhub_client import MemoryHub, AsyncMemoryHub;"
        " print(sorted({m.split('.')[0] for m in sys.modules} & {'langchain_core', 'langgraph',"
        " 'langmem', 'agents', 'openai'}))"
    )
    src = Path(__file__).resolve().parents[2] / "sdk" / "python" / "src"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(src)},
    )
    assert out.stdout.strip() == "[]"


def test_extras_declared_and_in_the_dev_install() -> None:
    root = Path(__file__).resolve().parents[2]
    client = tomllib.loads((root / "sdk" / "python" / "pyproject.toml").read_text())["project"]
    assert client["dependencies"] == ["httpx>=0.25,<1"] and client["classifiers"]
    extras = client["optional-dependencies"]
    assert set(extras) == {"langchain", "langgraph", "openai-agents"}
    dev = " ".join(
        tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"][
            "dev"
        ]
    )
    for requirement in [*extras.values(), ["langchain-tests", "langmem"]]:
        for name in requirement:
            assert re.split(r"[<>=]", name)[0] in dev, name


def test_every_framework_has_a_snippet() -> None:
    found = snippets()
    for heading in HEADINGS:
        assert len(found.get(heading, [])) == 1, heading


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGSMITH_TRACING", "false")
    monkeypatch.setenv("LANGCHAIN_TRACING_V2", "false")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-not-used")


def run_snippet(heading: str, live_server: Any, key: str) -> dict[str, Any]:
    for module in HEADINGS[heading]:
        pytest.importorskip(module)
    (code,) = snippets()[heading]
    code = code.replace("http://127.0.0.1:8000", live_server.url)
    scope: dict[str, Any] = {"KEY": key, "__name__": "readme_snippet"}
    exec(compile(code, f"docs/frameworks.md ({heading})", "exec"), scope)  # noqa: S102 - the README's own code
    return scope


def test_langchain_snippet(
    live_server: Any, keys: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    scope = run_snippet("LangChain", live_server, keys["alice"])
    assert [m.content for m in scope["history"].messages] == [
        "I moved to Lyon in May.",
        "Noted: Lyon since May.",
    ]
    assert "Lyon" in capsys.readouterr().out


def test_langgraph_snippet(
    live_server: Any, keys: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    scope = run_snippet("LangGraph and LangMem", live_server, keys["alice"])
    values = [item.value for item in scope["store"].search(("users", "ann"))]
    assert {"text": "Ann is vegetarian."} in values and {
        "content": "Ann prefers a window seat."
    } in values
    out = capsys.readouterr().out
    assert "vegetarian" in out and "window seat" in out


def test_openai_agents_snippet(
    live_server: Any,
    keys: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    agents = pytest.importorskip("agents")
    from agents import ModelResponse, Usage
    from agents.models.interface import Model
    from agents.models.multi_provider import MultiProvider
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText

    seen: list[list[Any]] = []

    class FakeModel(Model):
        async def get_response(
            self,
            system_instructions: Any,
            input: Any,
            *args: Any,  # noqa: A002
            **kwargs: Any,
        ) -> ModelResponse:
            seen.append(list(input))
            lived = any("Lyon" in str(item) for item in input[:-1])
            text = "You live in Lyon." if lived else "Noted."
            message = ResponseOutputMessage(
                id="msg_1",
                type="message",
                role="assistant",
                status="completed",
                content=[ResponseOutputText(text=text, type="output_text", annotations=[])],
            )
            return ModelResponse(output=[message], usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    monkeypatch.setattr(MultiProvider, "get_model", lambda self, name: FakeModel())
    agents.set_tracing_disabled(True)
    run_snippet("OpenAI Agents SDK", live_server, keys["alice"])
    assert capsys.readouterr().out.strip() == "You live in Lyon."
    assert len(seen) == 2 and len(seen[1]) == 3  # the first turn's two items, then the question
