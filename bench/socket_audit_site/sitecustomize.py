# Loaded by every Python process started with this folder first on PYTHONPATH (bench/socket_audit.py).
from bench.socket_audit import install_from_environment

install_from_environment()
