"""The smallest Typer + pydantic + rich command: one option, one dataclass, one table.

kernelcfg's cold start is measured against this (``make bench``).
"""

from __future__ import annotations

import typer
from pydantic.dataclasses import dataclass
from rich.console import Console
from rich.table import Table

app = typer.Typer()


@dataclass
class Settings:
    """One validated value."""

    device: str = "h100"
    """The device."""


@app.command()
def main(device: str = "h100") -> None:
    """Validate one dataclass and print it as a table."""
    settings = Settings(device=device)
    table = Table("field", "value")
    table.add_row("device", settings.device)
    Console().print(table)


if __name__ == "__main__":
    app()
