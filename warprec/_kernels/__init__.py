"""Numba kernels. They take arrays and scalars only; validation, allocation, seeding,
the epoch loop and progress reporting live in the Python API (``warprec.model``)."""
