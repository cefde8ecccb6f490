"""One module per page; each gets the ``Deps`` it needs, never the app."""
