"""What a committed lock promises over time, and the checks that keep the promise.

A lock says: these exact files install, months later, on a user's machine. The files live on
hosts lockgen does not control (indexes delete old builds, release pages move, mirrors drift).
The modules here read committed locks and the hosts they name; none of them writes ``locks/``:

* :mod:`.locate`: every file a set of locks installs, and where it is served;
* :mod:`.online`: ``lockgen check --online``: is every locked file still there, the same size
  and hash, published by the same publisher (``--attestations``);
* :mod:`.bundle`: ``lockgen bundle``: the files of some cells in one folder, with locks and a
  manifest that install them with no network;
* :mod:`.reproduce`: ``lockgen check --resolve``: would the same inputs resolve to the same
  locks today, and if not, why.

``docs/locks-over-time.md`` is the user's page.
"""
