"""Settings of tiers, decay, consolidation, forget-user and import/export (imported at the end of
memoryhub.settings)."""

from memoryhub.settings import env_bool, env_choice, env_float, env_int, env_str  # noqa: F401

# --- Decay (SPEC S8, seed 001): relevance = importance · rate^hours · (1 + ln(1 + accesses)) ----
# Per-hour retention by tier. A rate must be in (0, 1]: 1 means "never decays".
MEMORYHUB_DECAY_RATES = {
    "account": env_float("MEMORYHUB_DECAY_ACCOUNT", 0.999, low=1e-6, high=1.0),
    "workspace": env_float("MEMORYHUB_DECAY_WORKSPACE", 0.998, low=1e-6, high=1.0),
    "channel": env_float("MEMORYHUB_DECAY_CHANNEL", 0.995, low=1e-6, high=1.0),
    "conversation": env_float("MEMORYHUB_DECAY_CONVERSATION", 0.99, low=1e-6, high=1.0),
}

# --- Consolidation (SPEC S8, seeds 001 and 004) -----------------------------------------------
# Promote a short-term memory to long-term when relevance > this and access count > the next.
MEMORYHUB_PROMOTE_RELEVANCE = env_float("MEMORYHUB_PROMOTE_RELEVANCE", 0.7, low=0.0)
MEMORYHUB_PROMOTE_MIN_ACCESSES = env_int("MEMORYHUB_PROMOTE_MIN_ACCESSES", 3, minimum=0)
# Prune memories whose relevance fell below this (never when the tenant's transcript is immutable).
MEMORYHUB_PRUNE_RELEVANCE = env_float("MEMORYHUB_PRUNE_RELEVANCE", 0.01, low=0.0)
# Merge near-duplicates whose embeddings' cosine similarity is above this.
MEMORYHUB_MERGE_COSINE = env_float("MEMORYHUB_MERGE_COSINE", 0.95, low=0.0, high=1.0)
# Keep at most this many memories per scope (tenant, workspace, channel, session, tier); the
# lowest relevance goes first.
MEMORYHUB_CAP_PER_SCOPE = env_int("MEMORYHUB_CAP_PER_SCOPE", 10_000, minimum=1)
# Compress conversations idle (no new event) for this many hours into summaries.
MEMORYHUB_COMPRESS_AFTER_HOURS = env_int("MEMORYHUB_COMPRESS_AFTER_HOURS", 72, minimum=1)
# Kinds of memory consolidation may delete (prune, merge, cap). Events' chunks are memories
# derived from the transcript (the transcript itself is never touched); notes, facts, summaries
# and documents are written on purpose and are only scored and promoted unless listed here.
MEMORYHUB_CONSOLIDATE_DELETE_KINDS = tuple(
    k.strip() for k in env_str("MEMORYHUB_CONSOLIDATE_DELETE_KINDS", "event").split(",") if k.strip()
)
if set(MEMORYHUB_CONSOLIDATE_DELETE_KINDS) - {"event", "note", "fact", "summary", "document"}:
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(f"MEMORYHUB_CONSOLIDATE_DELETE_KINDS has unknown kinds: {MEMORYHUB_CONSOLIDATE_DELETE_KINDS}")
# Near-duplicates are found exactly (all pairs) in scopes of at most this many memories; in a
# larger scope each memory asks the HNSW index for its nearest MEMORYHUB_MERGE_NEIGHBOURS.
MEMORYHUB_MERGE_EXACT_MAX = env_int("MEMORYHUB_MERGE_EXACT_MAX", 1000, minimum=1)
MEMORYHUB_MERGE_NEIGHBOURS = env_int("MEMORYHUB_MERGE_NEIGHBOURS", 4, minimum=1)
# How many ids of each step a consolidation report keeps (the counts are always complete).
MEMORYHUB_REPORT_MAX_IDS = env_int("MEMORYHUB_REPORT_MAX_IDS", 1000, minimum=0)

# --- Import/export (SPEC S9) ------------------------------------------------------------------
MEMORYHUB_IMPORT_MAX_BYTES = env_int("MEMORYHUB_IMPORT_MAX_BYTES", 200 * 1024 * 1024, minimum=1024)
