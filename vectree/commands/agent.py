"""``vectree ask``, ``vectree serve`` and ``vectree mcp``: the query side, reading the store only."""

from __future__ import annotations

import json

import click
from rich.console import Console

from vectree.commands import cli_settings

from ._ids import resolve_paper

console = Console()


def confidence_line(confidence: float) -> str:
    """What the answer's confidence says, in words: the calibrated probability that the short answer
    matches what an expert would answer (QASPER's token F1 >= 0.5).  Each quote's own ``evidence``
    figure is the probability that the sentence bears on the question, which is usually higher."""
    strength = "strong" if confidence >= 0.6 else "moderate" if confidence >= 0.35 else "weak"
    note = "" if strength != "weak" else ": read the quoted evidence before relying on the short answer"
    return f"answer confidence {confidence:.2f} ({strength}){note}"


def print_answer(answer, *, trace: bool = True) -> None:
    """The answer, its citations (valid or not) and a compact trace of the tool calls."""
    console.print(f"[bold]Q:[/] {answer.question}")
    if getattr(answer, "abstained", False):
        # no citation is marked as supporting: the candidates are only where one might look
        console.print(f"[bold yellow]A:[/] {answer.answer}")
        for p in answer.possibly_relevant:
            text = p.get("text") or p.get("title") or ""
            text = text if len(text) <= 200 else text[:197] + "..."
            where = f" p.{p['page']}" if p.get("page") else ""
            console.print(f"   [yellow]?[/] possibly relevant: [cyan]{p['doc_id']}[/]{where} "
                          f"(relevance {p['relevance']:.2f}): “{text}”")
    else:
        console.print(f"[bold green]A:[/] {answer.answer}")
        confidence = getattr(answer, "confidence", None)
        if confidence is not None:
            console.print(f"   {confidence_line(confidence)}")
    for c in answer.citations:
        mark = "[green]✓[/]" if c.get("valid", True) else f"[red]✗ {c.get('reason', '')}[/]"
        quote = c["quote"] if len(c["quote"]) <= 220 else c["quote"][:217] + "..."
        evidence = f" (evidence {c['relevance']:.2f})" if c.get("relevance") is not None else ""
        console.print(f"   {mark} [cyan]{c['doc_id']}[/] p.{c['page']}{evidence}: “{quote}”")
    if trace and answer.trace:
        steps = answer.trace["steps"]
        line = " → ".join(f"{s['tool']}({s['tokens']})" + ("[red]![/]" if s.get("error") else "") for s in steps)
        tokens = answer.trace["tokens"]
        console.print(f"   [dim]{answer.agent} agent, {answer.seconds:.2f}s, tokens L0/L1/L2 "
                      f"{tokens['layer0']}/{tokens['layer1']}/{tokens['layer2']}: {line}[/]")


def ask_service(url: str, question: str, *, paper: str | None, agent: str, timeout: float = 300.0) -> dict:
    """POST the question to a running ``vectree serve`` (its ``/ask``): the model stays loaded
    there, so a repeated question costs the query, not a model load.  Sends ``VECTREE_API_TOKEN``
    as a bearer token when it is set."""
    import os
    import urllib.error
    import urllib.request

    body = {"question": question, "agent": agent, **({"paper": paper} if paper else {})}
    headers = {"Content-Type": "application/json"}
    token = cli_settings().token
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url.rstrip("/") + "/ask", data=json.dumps(body).encode(), headers=headers,
                                     method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.load(response)
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace")
        try:
            detail = json.loads(detail).get("detail", detail)
        except ValueError:
            pass
        raise click.ClickException(f"the service at {url} answered {exc.code}: {detail}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise click.ClickException(f"no vectree service at {url} ({getattr(exc, 'reason', exc)}); start one with "
                                   "`vectree serve`, or leave out --service / VECTREE_SERVICE_URL") from None


def register(main: click.Group) -> None:
    @main.command()
    @click.argument("question")
    @click.option("--paper", "paper", default=None, help="Answer within this paper (a doc id or a unique prefix); skips corpus search.")
    @click.option("--agent", type=click.Choice(["auto", "offline", "llm"]), default="auto", show_default=True,
                  help="auto: the LLM agent when OPENAI_BASE_URL is set, else the offline navigator.")
    @click.option("--max-iterations", type=int, default=None, help="LLM agent budget (default 30).")
    @click.option("--json", "as_json", is_flag=True, help="Print the answer, citations and trace as JSON.")
    @click.option("--store", "store_root", default=None, help="Store root (default $VECTREE_STORE or ./.vectree).")
    @click.option("--service", "service_url", default=None,
                  help="Ask a running `vectree serve` at this URL (default $VECTREE_SERVICE_URL), so the "
                  "model loads once for many questions; --store is then the service's.")
    def ask(question, paper, agent, max_iterations, as_json, store_root, service_url):
        """Answer QUESTION from the corpus, citing the pages the answer came from."""
        service_url = service_url or cli_settings(store_root).service_url  # VECTREE_SERVICE_URL
        if service_url:
            from types import SimpleNamespace

            from vectree.retrieval.store import Store

            local = cli_settings(store_root).store_root
            if paper and Store(local).view().catalog_path.exists():

                # the same store as the service's in the usual set-up: resolve a prefix here
                paper = resolve_paper(Store(local), paper)

            data = ask_service(service_url, question, paper=paper, agent=agent)
            if as_json:
                click.echo(json.dumps(data, indent=1, ensure_ascii=False))
            else:
                print_answer(SimpleNamespace(**{"trace": None, "seconds": 0.0, "agent": "", **data}))
            return
        from vectree.agent.ask import ask as run_ask
        from vectree.agent.tools import Toolbox, ToolError

        # why local: the agent loads openai, LanceDB and the embedder (seconds); --help skips them
        settings = cli_settings(store_root)
        toolbox = Toolbox(settings.store_root)
        if paper:
            from vectree.retrieval.store import Store

            paper = resolve_paper(Store(cli_settings(store_root).store_root), paper)
        try:
            answer = run_ask(toolbox, question, paper=paper, agent=agent, max_iterations=max_iterations,
                             settings=settings)
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
        # why local: uvicorn and FastAPI cost ~2 s to import; only `serve` needs them
        import uvicorn

        from vectree.service.http import create_app

        settings = cli_settings(store_root)
        root = settings.store_root
        from vectree.retrieval.store import Store

        if not Store(root).view().catalog_path.exists():
            Console(stderr=True).print(f"[yellow]warning:[/] {root} holds no catalog yet; run `vectree ingest` "
                                       "or `vectree demo`")
        uvicorn.run(create_app(root, settings=settings), host=host, port=port, log_level="info")

    @main.command()
    @click.option("--store", "store_root", default=None, help="Store root (default $VECTREE_STORE or ./.vectree).")
    def mcp(store_root):
        """Serve the seven tools as an MCP server over stdio."""
        from vectree.service.mcp_server import serve_stdio  # why local: the MCP SDK costs ~3 s to import

        settings = cli_settings(store_root)
        serve_stdio(settings.store_root, settings=settings)
