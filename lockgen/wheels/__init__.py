"""Readers of locked artifacts (the wheels themselves, not their metadata in the index).

* :mod:`.fatbin`: NVIDIA fat binaries (``.nv_fatbin``): the SASS and PTX targets.
* :mod:`.offload`: clang offload bundles (``.hip_fatbin``), plain and compressed: the gfx targets.
* :mod:`.binaries`: where those sections are in an ELF shared object or a PE DLL.
* :mod:`.coverage`: one wheel's GPU code (every shared object in it), from a seekable file.
* :mod:`.remote`: that reading over HTTP range requests, and its cache by sha256.
* :mod:`.cells`: a cell's GPU wheels (from its pylock) and the manifest's ``coverage`` record.

Everything below :mod:`.coverage` is a pure function of bytes (``docs/select.md``, "Kernel coverage").
"""
