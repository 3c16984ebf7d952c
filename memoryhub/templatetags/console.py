"""Template filters of the operator console's pages."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.text import capfirst

from memoryhub.plumbing.console_site import NAMES

register = template.Library()


@register.filter
def list_title(opts: Any) -> str:
    """A list's title: what it lists, named as the sidebar names it ("People (end users)"), rather
    than Django's "Select end user to view"."""
    return NAMES.get(f"{opts.app_label}.{opts.object_name}") or capfirst(opts.verbose_name_plural)
