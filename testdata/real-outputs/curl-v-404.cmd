curl -v http://127.0.0.1:18938/CHANGES.txt http://127.0.0.1:18938/api/v2/releases
