"""The ground floor: errors and exit codes, problems, bounded reading of untrusted input.

Imports nothing else of kernelcfg.
"""
