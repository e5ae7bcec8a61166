"""Where untrusted code runs: the sandbox, the folders and CPUs it gets, the libraries
it sees, the GPU it is timed on, and what this machine offers (doctor).
"""
