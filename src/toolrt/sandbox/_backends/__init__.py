"""How a child is confined from outside: probing the host, choosing the backend, starting it.

:mod:`.plan` turns the probes' results into the backend a runtime uses (the ladder) and builds the
bwrap command line; :mod:`.probe` runs the capability probes (and the throwaway children every
probe uses); :mod:`.uid_drop` finds an interpreter and a bootstrap that a root host's uid-dropped
child can run; :mod:`.seatbelt` is macOS's ``sandbox-exec`` profile and probe. Host code: it may
import ``toolrt``, and it reads the child's folder (``toolrt.sandbox._child``) only to probe it.
"""
