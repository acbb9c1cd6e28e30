"""The query service: HTTP (FastAPI) and MCP servers over the artefact store; they only read it."""
