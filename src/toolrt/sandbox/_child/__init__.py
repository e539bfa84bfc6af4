"""The code that runs inside the confined child: standard library only, never ``toolrt``.

The host starts ``bootstrap.py`` from this folder as a script (``python -I -S``), and the bootstrap
loads the folder's other modules by path, in the order it lists (``bootstrap.CHILD_FILES``, the
folder's one file list). Everything here may be read by a uid-dropped child and runs before (and,
for the bootstrap's run loop, beside) untrusted code, so nothing here may import from outside the
standard library and this folder (``tests/sandbox/test_child_folder.py``). The host imports these
modules as ``toolrt.sandbox._child.<name>`` only to probe and test them; the child never loads
this ``__init__``.
"""
