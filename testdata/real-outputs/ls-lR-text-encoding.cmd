ls -lR text/encoding
