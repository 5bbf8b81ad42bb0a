"""The programs the fault campaign (bench/faults/) starts and kills: each runs as
``python -m testing.fault_children.NAME ARGS`` with MEMDESK_HOME set to a trial's folder."""
