ls -lR text/internal
