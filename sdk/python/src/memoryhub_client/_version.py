"""The client's version (sent in its User-Agent), in a module of its own so that the client
modules need not import the package they are part of."""

__version__ = "0.1.0"
