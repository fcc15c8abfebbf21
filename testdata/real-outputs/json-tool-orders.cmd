python3 -m json.tool orders.json
