"""Subcommand modules.  Each module here defines ``register(group)`` and is loaded by ``vectree.cli``,
so a new command is a new file, not an edit to the CLI's core."""
