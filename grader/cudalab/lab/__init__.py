"""What a lab is: its lab.toml, the name that finds it, its libraries' catalogue,
its images and the starter file made from its solution.
"""
