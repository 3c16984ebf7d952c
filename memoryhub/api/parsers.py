"""The API's JSON parser: DRF's, plus the depth and Unicode checks of
memoryhub.plumbing.jsonchecks."""

from __future__ import annotations

import codecs
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from memoryhub.plumbing import jsonchecks


class CheckedJSONParser(JSONParser):
    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: dict[str, Any] | None = None,
    ) -> Any:
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = codecs.decode(stream.read(), encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        try:
            return jsonchecks.loads(text, parse_constant=_no_constants)
        except ValueError as exc:  # json.JSONDecodeError, and NaN/Infinity (not JSON)
            raise ParseError(f"JSON parse error - {exc}") from None


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")
