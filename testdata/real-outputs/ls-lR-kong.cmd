ls -lR kong
