ls -lR text/unicode
