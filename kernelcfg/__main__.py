"""``python -m kernelcfg``."""

from kernelcfg.cli import main

main()
