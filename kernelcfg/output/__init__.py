"""Output: tables, JSON, YAML, env, args and the CI report formats, and the JSON
Schemas of every command's machine output.

Imports ``kernelcfg.commands`` and below; never prints on its own.
"""
