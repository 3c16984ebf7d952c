"""Project plumbing: serving, supervision, the embedded database, background lanes, request
limits, logs, outbound HTTP and counters. The memory domain lives beside this package in
memoryhub/."""
