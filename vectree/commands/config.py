"""``vectree config``: the effective settings (secrets masked), or the README's settings table."""

from __future__ import annotations

from pathlib import Path

import click


def register(group: click.Group) -> None:
    @group.command("config")
    @click.option("--markdown", is_flag=True, help="Print the settings table (Markdown) the README embeds.")
    @click.option("--write-readme", "readme", type=click.Path(dir_okay=False, exists=True, path_type=Path),
                  default=None, help="Rewrite the table between the settings-table markers of this README.")
    @click.option("--json", "as_json", is_flag=True, help="Print the effective settings as JSON.")
    def config_command(markdown: bool, readme: Path | None, as_json: bool) -> None:
        """Show every setting with its effective value (environment, VECTREE_CONFIG file, defaults)."""
        import json

        from vectree.commands import cli_settings
        from vectree.retrieval.config import replace_table, settings_table

        if markdown:
            click.echo(settings_table(), nl=False)
            return
        if readme is not None:
            before = readme.read_text(encoding="utf-8")
            after = replace_table(before)
            readme.write_text(after, encoding="utf-8")
            click.echo(f"{readme}: settings table {'updated' if after != before else 'already current'}")
            return
        values = cli_settings().effective()
        if as_json:
            click.echo(json.dumps(values, indent=1, default=str))
            return
        width = max(len(k) for k in values)
        for key, value in values.items():
            click.echo(f"{key:<{width}}  {'(unset)' if value is None else value}")
