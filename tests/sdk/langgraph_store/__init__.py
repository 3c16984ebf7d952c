# Copied from LangGraph's public repository, https://github.com/langchain-ai/langgraph,
# libs/checkpoint-sqlite/tests/test_store.py at commit 658541c4960f329864a2523fc7d52427e8190bed
# (the file's last change in the tree at f09cfe8ffc1eeffd68f4b628ed69c30f7cad229f), MIT licence.
#
# Adapted for MemoryHub only where the store is built: the `store` fixture, `create_vector_store`
# and the three `TestSqliteStore` methods that opened a SqliteStore now get a MemoryHubStore bound
# to the live test server (`store` twice: through the sync client, and through `abatch` with the
# async client); annotations name MemoryHubStore. Left out, being about SQLite or about a
# client-side embedding model rather than the store interface: the tests of SqliteStore's
# migrations, GLOB/regex helpers and query plan (test_nonnull_migrations, test_escape_glob_literal,
# test_namespace_match_pattern, test_list_namespaces_prefix_uses_indexable_condition) and those
# that check CharacterEmbeddings' scores and `index_config` (test_vector_*, test_embed_with_path*,
# test_scores): MemoryHub embeds on the server with its own model, so those scores do not apply.
# Every other test is as it stands upstream.
#
# Split by what the tests exercise (the upstream file is one): test_batch.py (batch()),
# test_store_class.py (TestSqliteStore's), test_operations.py (put, get, search, list_namespaces),
# test_filters.py (filter values and keys, non-ASCII text), test_namespaces.py (namespace matching);
# the store they run against is conftest.py's, the helpers support.py's.
