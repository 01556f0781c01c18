"""The deployment on Aegra (``./run.sh serve``): its environment, config, entry points and processes."""
