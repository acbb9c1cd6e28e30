"""``vectree ask``, ``vectree serve`` and ``vectree mcp``: the query side, reading the store only."""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.table import Table

from vectree.retrieval.config import load_settings

console = Console()


def print_answer(answer, *, trace: bool = True) -> None:
    """The answer, its citations (valid or not) and a compact trace of the tool calls."""
    console.print(f"[bold]Q:[/] {answer.question}")
    if getattr(answer, "abstained", False):
        # no citation is marked as supporting: the candidates are only where one might look
        console.print(f"[bold yellow]A:[/] {answer.answer}")
        for p in answer.possibly_relevant:
            text = p["text"] if len(p["text"]) <= 200 else p["text"][:197] + "..."
            where = f" p.{p['page']}" if p.get("page") else ""
            console.print(f"   [yellow]?[/] possibly relevant: [cyan]{p['doc_id']}[/]{where} "
                          f"(relevance {p['relevance']:.2f}): “{text}”")
    else:
        console.print(f"[bold green]A:[/] {answer.answer}")
        confidence = getattr(answer, "confidence", None)
        if confidence is not None:
            strength = "strong" if confidence >= 0.6 else "moderate" if confidence >= 0.35 else "weak"
            note = "" if strength != "weak" else " - the evidence is weak: check the cited pages before relying on it"
            console.print(f"   confidence {confidence:.2f} ({strength}){note}")
    for c in answer.citations:
        mark = "[green]✓[/]" if c.get("valid", True) else f"[red]✗ {c.get('reason', '')}[/]"
        quote = c["quote"] if len(c["quote"]) <= 220 else c["quote"][:217] + "..."
        console.print(f"   {mark} [cyan]{c['doc_id']}[/] p.{c['page']}: “{quote}”")
    if trace and answer.trace:
        steps = answer.trace["steps"]
        line = " → ".join(f"{s['tool']}({s['tokens']})" + ("[red]![/]" if s.get("error") else "") for s in steps)
        tokens = answer.trace["tokens"]
        console.print(f"   [dim]{answer.agent} agent, {answer.seconds:.2f}s, tokens L0/L1/L2 "
                      f"{tokens['layer0']}/{tokens['layer1']}/{tokens['layer2']}: {line}[/]")


def register(main: click.Group) -> None:
    @main.command()
    @click.argument("question")
    @click.option("--paper", "paper", default=None, help="Answer within this paper (doc_id); skips corpus search.")
    @click.option("--agent", type=click.Choice(["auto", "offline", "llm"]), default="auto", show_default=True,
                  help="auto: the LLM agent when OPENAI_BASE_URL is set, else the offline navigator.")
    @click.option("--max-iterations", type=int, default=None, help="LLM agent budget (default 30).")
    @click.option("--json", "as_json", is_flag=True, help="Print the answer, citations and trace as JSON.")
    @click.option("--store", "store_root", default=None, help="Store root (default $VECTREE_STORE or ./.vectree).")
    def ask(question, paper, agent, max_iterations, as_json, store_root):
        """Answer QUESTION from the corpus, citing the pages the answer came from."""
        from vectree.agent.ask import ask as run_ask
        from vectree.agent.tools import Toolbox, ToolError

        toolbox = Toolbox(load_settings(store_root).store_root)
        try:
            answer = run_ask(toolbox, question, paper=paper, agent=agent, max_iterations=max_iterations)
        except (ToolError, ValueError) as exc:
            raise click.ClickException(str(exc)) from None
        if as_json:
            click.echo(json.dumps(answer.as_dict(), indent=1, ensure_ascii=False))
        else:
            print_answer(answer)

    @main.command()
    @click.option("--host", default="127.0.0.1", show_default=True)
    @click.option("--port", type=int, default=8765, show_default=True)
    @click.option("--store", "store_root", default=None, help="Store root (default $VECTREE_STORE or ./.vectree).")
    def serve(host, port, store_root):
        """Serve the tools, /ask and /health over HTTP (reads the store; set VECTREE_API_TOKEN to require a token)."""
        import uvicorn

        from vectree.service.http import create_app

        root = load_settings(store_root).store_root
        if not (root / "docs.parquet").exists():
            Console(stderr=True).print(f"[yellow]warning:[/] {root} holds no catalog yet; run `vectree ingest` "
                                       "or `vectree demo`")
        uvicorn.run(create_app(root), host=host, port=port, log_level="info")

    @main.command()
    @click.option("--store", "store_root", default=None, help="Store root (default $VECTREE_STORE or ./.vectree).")
    def mcp(store_root):
        """Serve the seven tools as an MCP server over stdio."""
        from vectree.service.mcp_server import serve_stdio

        serve_stdio(load_settings(store_root).store_root)

    @main.command("papers")
    @click.option("--store", "store_root", default=None)
    def papers(store_root):
        """List the papers that can be queried (id, pages, title)."""
        from vectree.retrieval.store import Store

        table = Table()
        for col in ("doc_id", "pages", "title"):
            table.add_column(col)
        for r in Store(load_settings(store_root).store_root).papers():
            table.add_row(r["doc_id"], str(r["n_pages"]), r["title"])
        console.print(table)
