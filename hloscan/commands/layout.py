"""Layout commands (size, diff, memory, signature): placeholder until wired."""

import click


def register(group: click.Group) -> None:
    return None
