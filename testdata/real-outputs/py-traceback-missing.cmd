python3 report.py orders.json orders-missing.json EUR
