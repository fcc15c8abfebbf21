python3 report.py orders.json GBP
