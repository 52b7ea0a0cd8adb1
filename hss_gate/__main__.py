"""`python -m hss_gate` runs the CLI."""

from hss_gate.cli import main

main()
