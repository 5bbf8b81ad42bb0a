"""One conversation as every front end drives it, without Qt: accepting and answering messages, and
the work nobody asked for."""
