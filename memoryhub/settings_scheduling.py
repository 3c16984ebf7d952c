"""Settings of schedules, runs and actions (imported at the end of memoryhub.settings)."""

from memoryhub.settings import env_bool, env_choice, env_float, env_int, env_str  # noqa: F401

# Shortest allowed interval between two runs of a schedule (interval cadences and cron), seconds.
MEMORYHUB_SCHEDULE_MIN_INTERVAL_SECONDS = env_int("MEMORYHUB_SCHEDULE_MIN_INTERVAL_SECONDS", 60, minimum=1)
# This many failed runs in a row pause the schedule.
MEMORYHUB_SCHEDULE_MAX_FAILURES = env_int("MEMORYHUB_SCHEDULE_MAX_FAILURES", 3, minimum=1)
# Runs kept per schedule (older ones are pruned when a run finishes and by `prune_runs`).
MEMORYHUB_SCHEDULE_RUNS_KEPT = env_int("MEMORYHUB_SCHEDULE_RUNS_KEPT", 50, minimum=1)
# A run still queued or running this long after it started is marked failed (timeout).
MEMORYHUB_SCHEDULE_RUN_TIMEOUT_SECONDS = env_int("MEMORYHUB_SCHEDULE_RUN_TIMEOUT_SECONDS", 900, minimum=10)
# Due schedules one dispatcher pass claims at most.
MEMORYHUB_SCHEDULE_DISPATCH_BATCH = env_int("MEMORYHUB_SCHEDULE_DISPATCH_BATCH", 100, minimum=1)
# The `agent_goal` action POSTs the goal here; empty = the action is unavailable.
MEMORYHUB_AGENT_WEBHOOK_URL = env_str("MEMORYHUB_AGENT_WEBHOOK_URL", "")
MEMORYHUB_AGENT_WEBHOOK_TIMEOUT = env_float("MEMORYHUB_AGENT_WEBHOOK_TIMEOUT", 30.0, low=0.1, high=3600)
MEMORYHUB_AGENT_WEBHOOK_TOKEN = env_str("MEMORYHUB_AGENT_WEBHOOK_TOKEN", "")

# OpenAPI: name the choice sets of schedules and runs (both have a `status`, as sessions do).
from memoryhub.settings import SPECTACULAR_SETTINGS  # noqa: E402

SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"] = {
    **SPECTACULAR_SETTINGS.get("ENUM_NAME_OVERRIDES", {}),
    "ScheduleStatusEnum": "scheduling.models.ScheduleStatus",
    "RunStatusEnum": "scheduling.models.RunStatus",
    # Sessions had the only `status` before schedules came: name theirs too, or it gets a hash.
    "SessionStatusEnum": "memoryhub.models.SessionStatus",
    "NotificationPolicyEnum": "scheduling.models.NotificationPolicy",
}
