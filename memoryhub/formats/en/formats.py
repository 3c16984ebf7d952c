"""Dates and times in the console: 2026-03-14 09:26 (ISO order, 24-hour clock, the server's time
zone)."""

DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i"
DATETIME_FORMAT = "Y-m-d H:i"
SHORT_DATE_FORMAT = "Y-m-d"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
# The date hierarchy's steps above a list: 2026, 2026-03, 2026-03-14.
MONTH_DAY_FORMAT = "Y-m-d"
YEAR_MONTH_FORMAT = "Y-m"
