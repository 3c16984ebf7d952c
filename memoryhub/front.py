"""Where a person lands: the home page at `/`, the API's index at `/api/v1/` and the favicon."""

from __future__ import annotations

import struct
from functools import cache

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_safe

# The pages a person opens, by what they are for; the start-up line and both indexes name these.
MCP_PATH = "/mcp/"


def front_pages() -> dict[str, str]:
    """Each page a person opens, by name, as a path on this server."""
    return {
        "reference": reverse("docs"),
        "schema": reverse("schema"),
        "console": reverse("admin:index"),
        "dashboard": reverse("memoryhub-dashboard"),
        "health": reverse("health"),
        "ready": reverse("ready"),
        "mcp": MCP_PATH,
    }


@require_safe
def home(request: HttpRequest) -> HttpResponse:
    """A small page that leads to the API reference, the console and the health check."""
    return render(request, "memoryhub/home.html", {"pages": front_pages()})


@require_safe
def api_index(request: HttpRequest) -> JsonResponse:
    """`/api/v1/` answers where its reference and the other pages are (absolute URLs)."""
    links = {name: request.build_absolute_uri(path) for name, path in front_pages().items()}
    return JsonResponse({"service": "MemoryHub", "api": "v1", "links": links})


@require_safe
def favicon(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(favicon_bytes(), content_type="image/x-icon")
    response["Cache-Control"] = "public, max-age=86400"
    return response


# A 16×16 "M", one character a pixel: built into an .ico here rather than kept as a binary file.
_GLYPH = (
    "................",
    "................",
    "................",
    ".##.........##..",
    ".###.......###..",
    ".####.....####..",
    ".##.##...##.##..",
    ".##..##.##..##..",
    ".##...###...##..",
    ".##....#....##..",
    ".##.........##..",
    ".##.........##..",
    ".##.........##..",
    "................",
    "................",
    "................",
)
_INK = (255, 255, 255, 255)  # RGBA
_PAPER = (0x41, 0x76, 0x90, 255)  # the admin's header blue


@cache
def favicon_bytes() -> bytes:
    """The glyph as an ICO file: one 32-bit bitmap, rows bottom-up, an empty AND mask."""
    size = len(_GLYPH)
    pixels = b"".join(
        bytes((b, g, r, a))
        for row in reversed(_GLYPH)
        for r, g, b, a in ((_INK if c == "#" else _PAPER) for c in row)
    )
    mask = bytes(size * 4)  # 16 one-bit pixels padded to 32 bits, per row: all opaque
    header = struct.pack(
        "<IiiHHIIiiII", 40, size, size * 2, 1, 32, 0, len(pixels) + len(mask), 0, 0, 0, 0
    )
    image = header + pixels + mask
    directory = struct.pack("<HHH", 0, 1, 1) + struct.pack(
        "<BBBBHHII", size, size, 0, 0, 1, 32, len(image), 22
    )
    return directory + image
