package ctxkit_test

import "testing"

// proxyBaseURL is the base URL the real-client tests point their clients at, for an upstream
// listening at upstreamURL. This is the one seam between the real-client tests and ctx-proxy:
// here the clients talk to the fake upstream directly; with ctx-proxy merged, this starts a
// proxy in front of upstreamURL for the test and returns the proxy's address.
func proxyBaseURL(t *testing.T, upstreamURL string) string {
	t.Helper()
	return upstreamURL
}
