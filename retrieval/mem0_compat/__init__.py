"""mem0's REST API, served by MemoryHub: mem0's own `MemoryClient(api_key=<a MemoryHub key>,
host=<this server>)` works unchanged (memories.py says how mem0's entities map)."""
