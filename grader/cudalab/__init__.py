"""cudalab: build, run and grade CUDA coursework labs."""

__version__ = "0.1.0"
