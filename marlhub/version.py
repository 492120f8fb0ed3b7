"""The version of marlhub (read by the build and by ``marlhub --version``).

Example:
    >>> __version__.count(".")
    2
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
