package jsonlit

// AppendDecodedSlow is appendDecodedSlow, for the benchmark of package jsonlit_test.
var AppendDecodedSlow = appendDecodedSlow
