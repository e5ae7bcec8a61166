"""The official build: CMake over the harness and one implementation, the SDK it
assembles, and how a student bundle's build differs.
"""
