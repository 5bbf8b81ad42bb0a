"""Network helpers for every core layer: which hosts are this machine, an opener that never hands
loopback traffic to a proxy, and whether a server URL carries prompts unencrypted off the machine."""
