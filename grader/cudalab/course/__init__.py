"""The course service: a course's students, deadlines and try budgets, the service that runs
their tries and takes their hand-ins on the course's GPUs, and its pages."""
