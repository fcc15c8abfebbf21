python3 report.py orders.json USD
