go test ./spew
