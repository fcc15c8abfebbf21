curl -v http://127.0.0.1:18938/ (and twice more)
