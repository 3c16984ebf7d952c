"""What `manage.py run`'s processes log where: with a log file, the terminal is a person's (warnings
and errors of MemoryHub's own), and a library's Python warning goes to the file only."""

from __future__ import annotations

import json
import logging
import logging.config
import warnings
from pathlib import Path

from django.conf import settings

from memoryhub.plumbing.logs import logging_config


def test_a_librarys_warning_goes_to_the_log_file_not_the_terminal(tmp_path: Path, capsys) -> None:
    log_file = tmp_path / "memoryhub.log"
    logging.config.dictConfig(logging_config("INFO", "json", str(log_file)))
    logging.captureWarnings(True)  # as Django's setup does
    try:
        warnings.warn("`encoder_attention_mask` is deprecated", FutureWarning, stacklevel=1)
        logging.getLogger("memoryhub.test").warning("the database restarted")
    finally:
        logging.captureWarnings(False)
        logging.config.dictConfig(settings.LOGGING)  # the tests' own logging again
        logging.captureWarnings(True)
    terminal = capsys.readouterr().err
    assert "the database restarted" in terminal and "encoder_attention_mask" not in terminal
    lines = [json.loads(line) for line in log_file.read_text().splitlines()]
    assert any("encoder_attention_mask" in line["message"] for line in lines)
