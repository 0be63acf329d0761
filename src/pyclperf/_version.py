"""pyclperf's version, in a module that imports nothing, so that every layer that records it
(tune's resume fingerprint, guide.json, ``pyclperf --version``) can take it from here."""

__version__ = "0.1.0"
