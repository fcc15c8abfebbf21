python3 report.py orders.json orders-bad.json EUR
