"""A hand-in read as data and judged before anything of it runs: its files, its
archive, its compiled object's symbols and the libraries it may not use.
"""
