"""Logging for `ragtap serve`: the level and the format (`[log] level` / `format`, RAGTAP_LOG_LEVEL / RAGTAP_LOG_FORMAT).

`text`: one line per record, `time LEVEL logger: message`.  `json`: one JSON object per line (time, level, logger,
message, and the traceback as `exception`), for log collectors that parse fields.
"""

from __future__ import annotations

import logging
import sys
from datetime import datetime, timezone

import orjson

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(entry).decode()


def configure_logging(level: str, fmt: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
