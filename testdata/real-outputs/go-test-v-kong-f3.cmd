go test -v .
