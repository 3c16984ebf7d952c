#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
    from django.core.management import execute_from_command_line

    from memoryhub.embedded_pg import ensure_running

    ensure_running()

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
