# Loaded by every Python process started with this folder first on PYTHONPATH (testing/socket_audit.py).
from testing.socket_audit import install_from_environment

install_from_environment()
