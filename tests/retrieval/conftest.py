from __future__ import annotations

from typing import Any

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "minilm: loads the real all-MiniLM-L6-v2 model (slower)")


def search(client: Any, **body: Any) -> Any:
    return client.post("/api/v1/search/", body, format="json")
