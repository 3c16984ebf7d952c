"""MemoryHub client: sync (`MemoryHub`) and async (`AsyncMemoryHub`) access to a MemoryHub service.

from memoryhub_client import MemoryHub
hub = MemoryHub(api_key="mh_…", base_url="http://127.0.0.1:8000")
hub.remember("chat-1", [{"role": "user", "content": "I moved to Lyon."}], user_id="u1")
print(hub.recall("Where do I live?", session="chat-1"))
"""

from memoryhub_client._core import RetryPolicy
from memoryhub_client._version import __version__
from memoryhub_client.client import AsyncMemoryHub, MemoryHub
from memoryhub_client.errors import (
    APIConnectionError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    MemoryHubError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    ServiceUnavailableError,
)
from memoryhub_client.types import Page

__all__ = [
    "APIConnectionError",
    "AsyncMemoryHub",
    "AuthenticationError",
    "BadRequestError",
    "ConflictError",
    "MemoryHub",
    "MemoryHubError",
    "NotFoundError",
    "Page",
    "PermissionDeniedError",
    "RateLimitError",
    "RetryPolicy",
    "ServerError",
    "ServiceUnavailableError",
    "__version__",
]
