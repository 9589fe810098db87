"""What each command computes, as data: one resolve or a batch of them (``pipeline``),
two resolves compared (``diff``), the releases known (``versions``).

Joins the flag parser and the resolution; never prints.
"""
