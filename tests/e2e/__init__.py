"""End to end: the real uv resolving against fake hosts on loopback, lockgen through its CLI (in
process, or as separate processes in the ``slow`` tier), installers into real venvs."""
