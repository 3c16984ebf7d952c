"""Dates and times in the console: 2026-03-14 09:26 (ISO order, 24-hour clock, the server's time zone)."""

DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i"
DATETIME_FORMAT = "Y-m-d H:i"
SHORT_DATE_FORMAT = "Y-m-d"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
MONTH_DAY_FORMAT = "F j"
YEAR_MONTH_FORMAT = "F Y"
