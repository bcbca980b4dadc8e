"""The ``oscar`` command line: parse, call the library, render. ``main`` lists the commands
and imports only the chosen one's module; a module holds one command or two close ones."""
