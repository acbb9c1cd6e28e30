"""The seven tools as a Model Context Protocol server (stdio transport): ``vectree mcp``.

Any MCP-capable assistant can then browse the corpus with progressive disclosure: search, read a
tree, search within a paper, and only then open pages.  Tool errors come back as MCP tool errors
with the same messages the built-in agent sees.
"""


import os

from vectree.agent.tools import TOOL_SPECS, Toolbox, ToolError
from vectree.retrieval.store import Store


def build_server(store_root: str | os.PathLike, *, settings=None):
    """An ``MCPServer`` exposing the tools over the store at ``store_root`` (``settings``: the
    edge's settings object; default: the environment's)."""
    from vectree.retrieval.config import load_settings
    from vectree.retrieval.threads import limit_blas_threads

    settings = settings or load_settings(store_root)
    limit_blas_threads(settings.blas_threads)  # see retrieval/threads.py
    from mcp.server.mcpserver import Image, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError as MCPToolError

    toolbox = Toolbox(Store(store_root))
    server = MCPServer(
        name="vectree",
        instructions="Answer questions over a corpus of scientific PDFs. Search papers first, read a "
        "paper's section tree before opening pages, open only the pages you need, and cite pages.",
    )

    def run(name: str, **args) -> str:
        try:
            return toolbox.call(name, args).text
        except ToolError as exc:  # an anticipated failure: the client reads the message
            raise MCPToolError(str(exc)) from None

    def search_papers(query: str, k: int = 5) -> str:
        return run("search_papers", query=query, k=k)

    def get_document_tree(doc_id: str, max_depth: int = 2) -> str:
        return run("get_document_tree", doc_id=doc_id, max_depth=max_depth)

    def get_section(doc_id: str, node_id: str) -> str:
        return run("get_section", doc_id=doc_id, node_id=node_id)

    def search_within_paper(doc_id: str, query: str, k: int = 5) -> str:
        return run("search_within_paper", doc_id=doc_id, query=query, k=k)

    def get_page_content(doc_id: str, pages: list[int]) -> str:
        return run("get_page_content", doc_id=doc_id, pages=pages)

    def get_page_image(doc_id: str, page: int, dpi: int = 100) -> Image:
        try:
            png, _, _ = toolbox.render_page_png(doc_id, page, dpi)
        except ToolError as exc:
            raise MCPToolError(str(exc)) from None
        return Image(data=png, format="png")

    def submit_answer(answer: str, citations: list[dict]) -> str:
        return run("submit_answer", answer=answer, citations=citations)

    for fn in (search_papers, get_document_tree, get_section, search_within_paper, get_page_content,
               get_page_image, submit_answer):
        server.add_tool(fn, name=fn.__name__, description=TOOL_SPECS[fn.__name__]["description"])
    return server


def serve_stdio(store_root: str | os.PathLike, *, settings=None) -> None:
    build_server(store_root, settings=settings).run("stdio")
