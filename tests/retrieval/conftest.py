from __future__ import annotations

from typing import Any

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "minilm: loads the real all-MiniLM-L6-v2 model (slower)")


def search(client: Any, **body: Any) -> Any:
    return client.post("/api/v1/search/", body, format="json")


def texts(response: Any) -> list[str]:
    assert response.status_code == 200, response.content
    return [r["text"] for r in response.json()["results"]]


@pytest.fixture
def garden(alice, index) -> None:
    index(
        alice,
        "garden",
        {"role": "user", "content": "I planted tomatoes and basil in the garden."},
        {"role": "assistant", "content": "Tomatoes need plenty of sun and water."},
        {
            "role": "user",
            "content": "My sister Ana visits every Sunday.",
            "metadata": {"tags": ["family"]},
        },
    )
    index(alice, "work", {"role": "user", "content": "The quarterly report is due on Friday."})
    index(
        alice,
        "tools",
        {
            "role": "tool",
            "content": "",
            "tool_name": "calendar",
            "tool_args": {"event": "report deadline"},
        },
    )


@pytest.fixture(autouse=True)
def _no_table_size_from_earlier_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    """Exact search reaches further in a big table (search.sql.exact_below), by the row estimate the
    last search read in this process: each test starts from none, so that a test's strategy does
    not depend on which tests ran before it in the same worker."""
    monkeypatch.setattr("retrieval.search.statistics._table_rows", 0)
