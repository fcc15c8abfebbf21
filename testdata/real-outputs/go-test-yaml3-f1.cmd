go test .
