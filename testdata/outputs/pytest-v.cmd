python3 -m pytest -v
