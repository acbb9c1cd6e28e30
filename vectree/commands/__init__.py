"""Subcommand modules.  Each module here defines ``register(group)`` and is loaded by ``vectree.cli``,
so a new command is a new file, not an edit to the CLI's core."""


def cli_settings(store_root=None):
    """The settings the ``vectree`` group built once for this invocation (``ctx.obj``), with a
    subcommand's ``--store`` applied; outside a click context (library use, tests) they are
    built from the environment."""
    import click

    from vectree.retrieval.config import Settings, as_store_root, load_settings

    ctx = click.get_current_context(silent=True)
    base = ctx.find_object(Settings) if ctx is not None else None
    if base is None:
        return load_settings(store_root)
    return base.model_copy(update={"store_root": as_store_root(str(store_root))}) if store_root else base
