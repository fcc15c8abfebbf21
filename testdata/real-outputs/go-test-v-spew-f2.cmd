go test -v ./spew
