"""Settings of notes, facts, scratchpad and summaries (imported at the end of memoryhub.settings)."""

from memoryhub.settings import env_bool, env_choice, env_float, env_int, env_str  # noqa: F401

# --- Notes and facts (S5) ----------------------------------------------------------------------
MEMORYHUB_MAX_TAGS = env_int("MEMORYHUB_MAX_TAGS", 16, minimum=1)
MEMORYHUB_MAX_TAG_CHARS = env_int("MEMORYHUB_MAX_TAG_CHARS", 64, minimum=1)
MEMORYHUB_MAX_MEMORY_CHARS = env_int("MEMORYHUB_MAX_MEMORY_CHARS", 50_000, minimum=100)

# --- Scratchpad (S5, seed 000): at most 32 items of at most 240 characters ---------------------
MEMORYHUB_SCRATCHPAD_MAX_ITEMS = env_int("MEMORYHUB_SCRATCHPAD_MAX_ITEMS", 32, minimum=1)
MEMORYHUB_SCRATCHPAD_MAX_CHARS = env_int("MEMORYHUB_SCRATCHPAD_MAX_CHARS", 240, minimum=1)

# --- Rolling summary (S6, seed 000) -------------------------------------------------------------
# Summarise when at least this many messages are not yet in the summary ...
MEMORYHUB_SUMMARY_MIN_MESSAGES = env_int("MEMORYHUB_SUMMARY_MIN_MESSAGES", 4, minimum=1)
# ... and they use more than this share of the budget (tokens; default: the restore budget) ...
MEMORYHUB_SUMMARY_BUDGET = env_int("MEMORYHUB_SUMMARY_BUDGET", 4000, minimum=50)
MEMORYHUB_SUMMARY_TRIGGER = env_float("MEMORYHUB_SUMMARY_TRIGGER", 0.80, low=0.01, high=1.0)
# ... condensing the oldest of them until the rest fits in this share.
MEMORYHUB_SUMMARY_TARGET = env_float("MEMORYHUB_SUMMARY_TARGET", 0.50, low=0.0, high=1.0)
# The rolling summary itself never grows beyond this share of the budget (oldest lines dropped).
MEMORYHUB_SUMMARY_MAX_SHARE = env_float("MEMORYHUB_SUMMARY_MAX_SHARE", 0.30, low=0.01, high=1.0)
# At most this many of the newest unsummarised events are read by one summarisation.
MEMORYHUB_SUMMARY_MAX_EVENTS = env_int("MEMORYHUB_SUMMARY_MAX_EVENTS", 2000, minimum=10)
# Check the trigger (and grow the summary tree) in the background after every append.
MEMORYHUB_AUTO_SUMMARISE = env_bool("MEMORYHUB_AUTO_SUMMARISE", True)

# --- Summary tree (S6, seed 002) ----------------------------------------------------------------
MEMORYHUB_SUMMARY_LEAF_EVENTS = env_int("MEMORYHUB_SUMMARY_LEAF_EVENTS", 8, minimum=1)
MEMORYHUB_SUMMARY_BRANCH_CHILDREN = env_int("MEMORYHUB_SUMMARY_BRANCH_CHILDREN", 4, minimum=2)
# A session with no new event for this many minutes gets its unfinished leaf/branch closed.
MEMORYHUB_SUMMARY_IDLE_MINUTES = env_int("MEMORYHUB_SUMMARY_IDLE_MINUTES", 30, minimum=0)

# --- Summariser (S6): "extractive" (no LLM) or "http" (an OpenAI-compatible chat completions API) -
MEMORYHUB_SUMMARISER = env_choice("MEMORYHUB_SUMMARISER", "extractive", {"extractive", "http"})
MEMORYHUB_SUMMARISER_URL = env_str("MEMORYHUB_SUMMARISER_URL", "")  # e.g. http://host:port/v1
MEMORYHUB_SUMMARISER_MODEL = env_str("MEMORYHUB_SUMMARISER_MODEL", "")
MEMORYHUB_SUMMARISER_API_KEY = env_str("MEMORYHUB_SUMMARISER_API_KEY", "")
MEMORYHUB_SUMMARISER_TIMEOUT = env_float("MEMORYHUB_SUMMARISER_TIMEOUT", 30.0, low=0.1)
# Characters kept of one condensed turn by the extractive summariser.
MEMORYHUB_SUMMARY_LINE_CHARS = env_int("MEMORYHUB_SUMMARY_LINE_CHARS", 200, minimum=20)

# --- Fact extractor (S5): "none" (default) or "http" (OpenAI-compatible) -------------------------
MEMORYHUB_FACT_EXTRACTOR = env_choice("MEMORYHUB_FACT_EXTRACTOR", "none", {"none", "http"})
MEMORYHUB_FACT_EXTRACTOR_URL = env_str("MEMORYHUB_FACT_EXTRACTOR_URL", "")
MEMORYHUB_FACT_EXTRACTOR_MODEL = env_str("MEMORYHUB_FACT_EXTRACTOR_MODEL", "")
MEMORYHUB_FACT_EXTRACTOR_API_KEY = env_str("MEMORYHUB_FACT_EXTRACTOR_API_KEY", "")
MEMORYHUB_FACT_EXTRACTOR_TIMEOUT = env_float("MEMORYHUB_FACT_EXTRACTOR_TIMEOUT", 30.0, low=0.1)
