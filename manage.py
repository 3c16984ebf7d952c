#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
    from django.core.management import execute_from_command_line

    from memoryhub.plumbing.embedded_pg import ensure_running, start_line
    from memoryhub.plumbing.still import saying_still

    if sys.argv[1:2] == ["run"] and (line := start_line()):
        print(line, flush=True)  # the first thing `make run` says: a new database takes a while
        with saying_still(lambda text: print(text, flush=True), "starting the database"):
            ensure_running()
        with saying_still(lambda text: print(text, flush=True), "loading MemoryHub"):
            import django

            django.setup()
    else:
        if sys.argv[1:2] == ["mcp"]:  # serves an installation that exists: never creates a database
            from memoryhub.plumbing.installation import use_existing_database

            use_existing_database(sys.argv)
        ensure_running()

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
