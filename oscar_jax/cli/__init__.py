"""The ``oscar`` command line: parse, call the library, render. One module per command;
``main`` builds the parser."""
