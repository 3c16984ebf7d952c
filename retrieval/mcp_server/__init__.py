"""MemoryHub over the Model Context Protocol: memory tools for agents, on the official `mcp` SDK.

catalog.py lists the tools (schemas read off the REST serializers), tools.py runs them with the REST
API's own validation and domain functions, server.py is the MCP server, http.py serves it at /mcp/
(streamable HTTP, API-key authenticated) and `manage.py mcp --key …` serves it over stdio.
"""
