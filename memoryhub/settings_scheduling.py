"""Settings of schedules, runs and actions (imported at the end of memoryhub.settings)."""

from memoryhub.settings import env_bool, env_choice, env_float, env_int, env_str  # noqa: F401
