"""The verbs of `cudalab VERB`, one module each: its arguments (`add_arguments`), its
`main(args, config)` and what it prints. A command is a thin layer over the engine (the
modules of the package above this one) and never imports another command; the engine
never imports a command (tests/test_layering.py keeps both true).
"""
