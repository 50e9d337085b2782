"""Small helpers shared by the command line and the importers."""
