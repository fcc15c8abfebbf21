python3 reconcile_ledger.py data/ledger-2026-10.csv
