python3 -m json.tool broken.json
