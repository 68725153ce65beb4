from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent.parent
# Written by scripts/servers.py with the addresses of the services it found or started.
SERVICES_ENV_FILE = BASE_DIR / "var" / "services.env"
