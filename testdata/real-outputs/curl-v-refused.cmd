curl -v --retry 3 http://127.0.0.1:18938/releases.json
