"""A class graded in one command: the batch, its progress, and the executors that
grade it on this machine or a Slurm cluster.
"""
